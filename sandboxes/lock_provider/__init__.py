"""Sandbox lock provider: a stand-in smart-lock access-code API served over HTTP.

The access service's adapter talks to it exactly as to a real provider; the sandbox also
has a door to try PINs on and fault controls. See README.md for the API.
"""

from .app import create_app
from .settings import Settings

__all__ = ["Settings", "create_app"]
