"""Sandbox card gateway: a stand-in card provider served over HTTP.

The payment service's adapter talks to it exactly as to a real provider, so switching
to a real one is a matter of configuration. See README.md for the API and fault controls.
"""

from .app import create_app
from .settings import Settings, SettingsError

__all__ = ["Settings", "SettingsError", "create_app"]
