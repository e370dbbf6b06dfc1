"""The Signals MCP server: read-only tools, one per data endpoint, for AI agents on the
Professional plan, on the official `mcp` SDK (2.x, the low-level `Server`).

    python -m connectors.mcp            # stdio: SIGNALS_API_KEY, SIGNALS_API_URL
    python -m connectors.mcp http       # streamable HTTP at /mcp on SIGNALS_MCP_PORT (default 8001)

Every tool call is one request to the REST API through `connectors.client.SignalsClient` with the
caller's key, so tiers, rate limits, caching, noise and errors are the API's. See server.py.
"""
