"""The customers' web pages: page shells and texts rendered here, data read by the browser
from the gateway's own public API (/v1/...) on the same origin."""
