"""Address lists such as SIGNALS_TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1' -> networks."""

from __future__ import annotations

import ipaddress

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(text: str) -> tuple[Network, ...]:
    """'10.0.0.0/8, 127.0.0.1' -> networks (empty text: none). Raises ValueError naming a bad entry."""
    networks = []
    for item in (part.strip() for part in text.split(",")):
        if item:
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(f"{item!r} is not an IP address or network") from None
    return tuple(networks)
