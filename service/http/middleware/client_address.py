"""Who is on the other end, for throttling failed authentication per address.

Behind a load balancer every request comes from the balancer's address, so one client's bad keys
would block everybody. Proxies listed in SIGNALS_TRUSTED_PROXIES are therefore looked through:
the client is the rightmost address in X-Forwarded-For that is not a trusted proxy. Headers from
anyone else are ignored (a client can write any X-Forwarded-For it likes).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import falcon

from envfields import Network


class ClientAddress:
    def __init__(self, trusted_proxies: Sequence[Network] = ()) -> None:
        self._trusted = tuple(trusted_proxies)

    def _is_trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address.strip())
        except ValueError:
            return False
        return any(ip in network for network in self._trusted)

    def __call__(self, req: falcon.Request) -> str:
        peer = req.remote_addr or "unknown"
        if not self._trusted or not self._is_trusted(peer):
            return peer
        forwarded = [hop.strip() for hop in (req.get_header("X-Forwarded-For") or "").split(",") if hop.strip()]
        for hop in reversed(forwarded):
            if not self._is_trusted(hop):
                return hop
        return peer
