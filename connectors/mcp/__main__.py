"""`python -m connectors.mcp [stdio|http]`: the MCP server over stdio (default) or streamable HTTP.

stdio: SIGNALS_API_KEY is checked with GET /api/v1/account first; the process exits with status 2
and a message on stderr when it is missing, refused, or on a plan below Professional, and with 1
when the API cannot be reached. http: SIGNALS_MCP_HOST (default 127.0.0.1), SIGNALS_MCP_PORT
(default 8001); each request brings its own key, and its caller's address goes to the API in
X-Forwarded-For (SIGNALS_TRUSTED_PROXIES names the proxies in front of this server whose
X-Forwarded-For is believed; uvicorn's own reading of it is off, so the peer stays the peer).
"""

from __future__ import annotations

import argparse
import logging
import sys

import anyio

from connectors.client import SignalsError
from connectors.mcp.server import Backend, build_server, http_app
from connectors.settings import ConnectorSettings, ConnectorSettingsError


def _stdio(settings: ConnectorSettings) -> int:
    from mcp.server.stdio import stdio_server

    if not settings.api_key:
        print("signals-mcp: SIGNALS_API_KEY is not set; set it to your Signals API key (Professional plan).",
              file=sys.stderr)
        return 2
    backend = Backend(settings.api_url)
    try:
        account = backend.account(settings.api_key)
    except SignalsError as exc:
        if exc.status == 401:
            print(f"signals-mcp: the API at {settings.api_url} refused the key in SIGNALS_API_KEY: {exc.detail}",
                  file=sys.stderr)
            return 2
        print(f"signals-mcp: cannot check the key with {settings.api_url}/api/v1/account: {exc}", file=sys.stderr)
        return 1
    if not backend.may_use_mcp(account):
        print(f"signals-mcp: the key's plan is {account.get('plan_label') or account.get('plan')}; the MCP server "
              "needs the Professional plan.", file=sys.stderr)
        return 2
    server = build_server(backend, stdio_key=settings.api_key)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)
    return 0


def _http(settings: ConnectorSettings) -> int:
    import uvicorn

    host, port_text = settings.mcp_host, settings.mcp_port
    if not port_text.isdigit():
        print(f"signals-mcp: SIGNALS_MCP_PORT must be a port number, not {port_text!r}", file=sys.stderr)
        return 2
    app = http_app(Backend(settings.api_url), host=host, trusted_proxies=settings.trusted_proxies)
    print(f"signals-mcp: streamable HTTP on http://{host}:{port_text}/mcp, API {settings.api_url}", file=sys.stderr)
    # proxy_headers off: KeyGate reads X-Forwarded-For itself, from SIGNALS_TRUSTED_PROXIES only
    # (uvicorn's would believe it from 127.0.0.1 and hide the peer).
    uvicorn.run(app, host=host, port=int(port_text), log_level="warning", proxy_headers=False)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m connectors.mcp", description="The Signals MCP server.")
    parser.add_argument("transport", nargs="?", choices=["stdio", "http"], default="stdio")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        settings = ConnectorSettings.from_env()
    except ConnectorSettingsError as exc:
        print(f"signals-mcp: {exc}", file=sys.stderr)
        return 2
    return _stdio(settings) if args.transport == "stdio" else _http(settings)


if __name__ == "__main__":
    sys.exit(main())
