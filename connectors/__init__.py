"""Connectors: everything that talks to the Signals API from outside, over HTTP only.

`connectors.client.SignalsClient` is the one client every consumer shares (the Google Sheets
connector here, later the MCP server and the dashboard). It never imports `service`: what it knows
about parameters comes from the API's served OpenAPI document.
"""

__version__ = "0.1.0"
