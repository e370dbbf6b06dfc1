"""Which webhook URLs may be called (server-side request forgery).

A URL is allowed when it is https and its host resolves only to global addresses. The check runs
at creation and again before every delivery, and the delivery connects to an address that was
checked, so a name that resolves differently the second time (DNS rebinding) cannot reach an
internal address. Forms that resolvers accept for internal addresses (0x7f000001, 2130706433,
017700000001, ::ffff:127.0.0.1, 64:ff9b::7f00:1) are all resolved first and refused as what they
are.

Only the ports a web receiver listens on are called (RECEIVER_PORTS: 443 and 8443 for https),
not 22, 25 or 6379 of a public host: a webhook must not become a port scanner or a way to write
to another protocol.

`allow_private` (SIGNALS_WEBHOOK_ALLOW_PRIVATE, development only) allows http (ports 80 and 8080)
and loopback and private addresses on any port from 1024 up, for a receiver on the developer's
machine; link-local (cloud metadata), multicast and unspecified addresses stay refused even then.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
from typing import cast
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Translation prefixes that embed an IPv4 address (RFC 6052, RFC 8215) and 6to4 (RFC 3056).
_EMBEDDING = (
    ipaddress.ip_network("64:ff9b::/96"),
    ipaddress.ip_network("64:ff9b:1::/48"),
    ipaddress.ip_network("2002::/16"),
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")
MAX_URL_LENGTH = 2048
RECEIVER_PORTS = {"https": (443, 8443), "http": (80, 8080)}
LOCAL_PORTS_FROM = 1024  # with allow_private: any port from here up on loopback and private addresses


class UrlRefused(ValueError):
    """The URL may not be called; the message says why (fit for a problem's field reason)."""


@dataclasses.dataclass(frozen=True)
class Target:
    """A checked URL: the host name to send (Host, SNI) and the addresses it may be reached at."""

    url: str
    scheme: str
    host: str
    port: int
    path: str  # path and query, as sent
    addresses: tuple[Address, ...]


def address_problem(address: Address, *, allow_private: bool) -> str | None:
    """Why an address may not be called, or None."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return f"{address} is an IPv4-mapped address"
        if any(address in net for net in _EMBEDDING):
            return f"{address} embeds an IPv4 address (NAT64/6to4)"
        if address.sixtofour is not None or address.teredo is not None:
            return f"{address} is a tunnelling address"
    if address.is_unspecified:
        return f"{address} is unspecified"
    if address.is_multicast:
        return f"{address} is multicast"
    if address.is_link_local:
        return f"{address} is link-local (cloud metadata lives there)"
    if allow_private and (address.is_loopback or address.is_private or address in _SHARED):
        return None
    if address.is_loopback:
        return f"{address} is loopback"
    if address.is_private or address in _SHARED:
        return f"{address} is private"
    if address.is_reserved:
        return f"{address} is reserved"
    if not address.is_global:
        return f"{address} is not a global address"
    return None


def parse(url: str, *, allow_private: bool) -> tuple[str, str, int, str]:
    """(scheme, host, port, path) of a URL we may call, or UrlRefused."""
    if not isinstance(url, str) or not url:
        raise UrlRefused("must be an https URL")
    if len(url) > MAX_URL_LENGTH:
        raise UrlRefused(f"is longer than {MAX_URL_LENGTH} characters")
    if not url.isascii() or any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise UrlRefused("must be an ASCII URL without spaces (encode an international domain name as xn--)")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    allowed = ("https", "http") if allow_private else ("https",)
    if scheme not in allowed:
        raise UrlRefused("must use https" + ("" if allow_private else " (http is not accepted)"))
    if parts.username is not None or parts.password is not None:
        raise UrlRefused("must not contain a user name or password")
    if parts.fragment:
        raise UrlRefused("must not contain a fragment (#...)")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise UrlRefused("has no host")
    try:
        port = parts.port if parts.port is not None else (443 if scheme == "https" else 80)
    except ValueError:
        raise UrlRefused("has an invalid port") from None
    if not 1 <= port <= 65535:
        raise UrlRefused("has an invalid port")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return scheme, host, port, path


def resolve(host: str, port: int) -> tuple[Address, ...]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UrlRefused(f"host {host!r} does not resolve ({exc})") from None
    addresses: list[Address] = []
    for info in infos:
        # An AF_INET/AF_INET6 address: its host is text (the stubs allow the int of other families).
        text = cast(str, info[4][0]).split("%", 1)[0]  # drop an IPv6 zone
        address = ipaddress.ip_address(text)
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise UrlRefused(f"host {host!r} does not resolve")
    return tuple(addresses)


def check(url: str, *, allow_private: bool) -> Target:
    """Parse, resolve and check every address; raises UrlRefused."""
    scheme, host, port, path = parse(url, allow_private=allow_private)
    addresses = resolve(host, port)
    for address in addresses:
        problem = address_problem(address, allow_private=allow_private)
        if problem:
            shown = "" if _is_literal(host) else f"{host} resolves to "
            raise UrlRefused(f"must reach a public address: {shown}{problem}")
    if port not in RECEIVER_PORTS[scheme] and not (
            allow_private and port >= LOCAL_PORTS_FROM and all(_is_local(a) for a in addresses)):
        accepted = " or ".join(str(p) for p in RECEIVER_PORTS[scheme])
        raise UrlRefused(f"must use port {accepted} for {scheme} (port {port} is not accepted)")
    return Target(url, scheme, host, port, path, addresses)


def _is_local(address: Address) -> bool:
    return address.is_loopback or address.is_private or address in _SHARED


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False
