"""connectors/: the client against the real API (in process through httpx's WSGI transport, or
served from a thread), its webhook methods, the forwarded caller address, and the Apps Script
functions; the Sheets connector and the MCP server have folders of their own below."""
