"""Which address failed authentications are counted against, with and without trusted proxies."""

from __future__ import annotations

import falcon.testing
import pytest

from envfields import parse_networks
from service.http.middleware.client_address import ClientAddress
from service.settings import Settings, SettingsError


def request(peer: str, forwarded: str | None = None) -> falcon.Request:
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    return falcon.Request(falcon.testing.create_environ("/", remote_addr=peer, headers=headers))


def test_without_trusted_proxies_the_peer_is_the_client_whatever_the_headers_say():
    assert ClientAddress()(request("203.0.113.7", "198.51.100.1")) == "203.0.113.7"


def test_through_a_trusted_proxy_the_rightmost_untrusted_hop_is_the_client():
    lookup = ClientAddress(parse_networks("10.0.0.0/8, 192.0.2.1"))
    assert lookup(request("10.1.2.3", "198.51.100.9")) == "198.51.100.9"
    # a client-written hop on the left cannot pose as someone else
    assert lookup(request("10.1.2.3", "1.2.3.4, 198.51.100.9, 192.0.2.1")) == "198.51.100.9"
    assert lookup(request("10.1.2.3")) == "10.1.2.3"
    assert lookup(request("203.0.113.7", "198.51.100.9")) == "203.0.113.7"  # not from a trusted proxy


def test_setting_is_parsed_and_checked():
    assert Settings.from_env({"SIGNALS_TRUSTED_PROXIES": "10.0.0.0/8,::1"}).trusted_proxies == parse_networks(
        "10.0.0.0/8, ::1")
    with pytest.raises(SettingsError, match="SIGNALS_TRUSTED_PROXIES"):
        Settings.from_env({"SIGNALS_TRUSTED_PROXIES": "10.0.0.0/8, bogus"})
