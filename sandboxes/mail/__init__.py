"""Mail sandbox: an SMTP server that keeps what it accepts and lists it over HTTP.

It injects the ambiguous failures of real mail servers through its control API. See
README.md for the API.
"""

from .app import create_app
from .settings import Settings

__all__ = ["Settings", "create_app"]
