"""The caller's address that the dashboard and the MCP server forward to the API: the value of
X-Forwarded-For (`forwarded_chain`), the client sending it, and SIGNALS_TRUSTED_PROXIES read by
the consumers' settings."""

from __future__ import annotations

import httpx
import pytest

from connectors.client import FORWARDED_HOPS, SignalsClient, SignalsError, forwarded_chain
from connectors.settings import ConnectorSettings, ConnectorSettingsError
from dashboard.settings import DashboardSettings
from envfields import parse_networks

LOCAL = parse_networks("127.0.0.1/32,::1/128")


def test_an_untrusted_peer_is_the_caller_whatever_it_forwards():
    assert forwarded_chain("198.51.100.7", None, LOCAL) == "198.51.100.7"
    assert forwarded_chain("198.51.100.7", "10.9.9.9, 1.2.3.4", LOCAL) == "198.51.100.7"  # a client's own claim
    assert forwarded_chain("127.0.0.1", "1.2.3.4", ()) == "127.0.0.1"  # nobody trusted


def test_a_trusted_proxys_chain_is_passed_on_with_the_peer_appended():
    assert forwarded_chain("127.0.0.1", "203.0.113.7", LOCAL) == "203.0.113.7, 127.0.0.1"
    assert forwarded_chain("::1", "203.0.113.7,  2001:db8::5", LOCAL) == "203.0.113.7, 2001:db8::5, ::1"
    assert forwarded_chain("127.0.0.1", "", LOCAL) == "127.0.0.1"  # the proxy forwarded nobody


def test_hops_are_normalised_and_bounded():
    assert forwarded_chain("127.0.0.1", "203.0.113.7:4711, [2001:db8::1]:443", LOCAL) == \
        "203.0.113.7, 2001:db8::1, 127.0.0.1"
    assert forwarded_chain("127.0.0.1", "évil, <script>, 203.0.113.7", LOCAL) == "unknown, unknown, 203.0.113.7, 127.0.0.1"
    long = ", ".join(f"10.0.0.{i}" for i in range(100))
    hops = forwarded_chain("127.0.0.1", long, LOCAL).split(", ")
    assert len(hops) == FORWARDED_HOPS and hops[-2:] == ["10.0.0.99", "127.0.0.1"]
    assert forwarded_chain(None, "1.2.3.4", LOCAL) is None  # a Unix socket: nobody to name
    assert forwarded_chain("", "1.2.3.4", LOCAL) is None


def test_the_client_sends_it_with_every_request():
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(503, json={"title": "down", "detail": "down"})

    client = SignalsClient("http://signals.test", "sig_live_x", transport=httpx.MockTransport(answer),
                           max_retries=0, forwarded_for="203.0.113.7, 127.0.0.1",
                           settings=ConnectorSettings(api_url="http://signals.test"))
    with pytest.raises(SignalsError):
        client.account()
    assert seen and all(r.headers["x-forwarded-for"] == "203.0.113.7, 127.0.0.1" for r in seen)
    plain = SignalsClient("http://signals.test", "sig_live_x", transport=httpx.MockTransport(answer), max_retries=0,
                          settings=ConnectorSettings(api_url="http://signals.test"))
    with pytest.raises(SignalsError):
        plain.account()
    assert "x-forwarded-for" not in seen[-1].headers


@pytest.mark.parametrize("value", ["1.2.3.4\r\nX-Evil: 1", "é", ""])
def test_the_client_refuses_a_value_that_is_not_a_chain(value):
    with pytest.raises(ValueError, match="forwarded_for"):
        SignalsClient("http://signals.test", "k", forwarded_for=value,
                      settings=ConnectorSettings(api_url="http://signals.test"))


def test_the_consumers_read_trusted_proxies_like_the_api():
    env = {"SIGNALS_TRUSTED_PROXIES": " 127.0.0.1/32, ::1/128 ,10.0.0.0/8"}
    expected = parse_networks("127.0.0.1/32,::1/128,10.0.0.0/8")
    assert ConnectorSettings.from_env(env).trusted_proxies == expected
    assert DashboardSettings.from_env(env).trusted_proxies == expected
    assert ConnectorSettings.from_env({}).trusted_proxies == ()
    with pytest.raises(ConnectorSettingsError, match="SIGNALS_TRUSTED_PROXIES: 'localhost'"):
        ConnectorSettings.from_env({"SIGNALS_TRUSTED_PROXIES": "127.0.0.1, localhost"})
