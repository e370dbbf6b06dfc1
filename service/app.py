"""`create_app`: builds the Falcon app from its collaborators. Tests pass their own (a fixed
clock, a fixture store, an accounts store on a temp database) instead of monkeypatching."""

from __future__ import annotations

import logging

import falcon

import cache
from service import __version__, backend
from service.accounts import AccountStore
from service.accounts.cached import CachedAuthenticator
from service.accounts.tokens import TokenSigner
from service.answers.compute_slots import ComputeSlots
from service.answers.flights import Flights
from service.answers.stale import StalePolicy
from service.api.endpoints import ENDPOINTS
from service.api.operations import OPERATIONS
from service.clock import Clock, SystemClock
from service.engine.interface import EventSource, QueryEngine
from service.http.errors import handle_unexpected, serialize_problem
from service.http.middleware.allow import AllowHeaderMiddleware
from service.http.middleware.auth import AuthenticationMiddleware, TierMiddleware
from service.http.middleware.client_address import ClientAddress
from service.http.middleware.cors import CorsMiddleware
from service.http.middleware.metrics import MetricsMiddleware
from service.http.middleware.query_encoding import QueryEncodingMiddleware
from service.http.middleware.rate_limit import RateLimitMiddleware
from service.http.middleware.request_id import RequestIdMiddleware
from service.http.middleware.token_scope import TokenScopeMiddleware
from service.http.middleware.url_length import UrlLengthMiddleware
from service.http.resources.account import AccountResource
from service.http.resources.health import HealthResource, ReadinessResource
from service.http.resources.openapi import OpenApiResource
from service.http.resources.privacy import PrivacyResource
from service.http.resources.signals import SignalsResource
from service.http.resources.tokens import TokensResource
from service.privacy import Privacy, PrivacyParams, noise_key_fingerprint
from service.privacy.budget import PrivacyBudget
from service.settings import Settings
from service.webhooks import resources as webhook_resources
from service.webhooks.webhook_store import WebhookStore

log = logging.getLogger("signals.app")

BACKGROUND_DEADLINE_FACTOR = 3  # precompute's deadline: this many times SIGNALS_COMPUTE_DEADLINE_SECONDS


def privacy_params(settings: Settings) -> PrivacyParams:
    return PrivacyParams(
        epsilon_suppressions=settings.privacy_epsilon_suppressions,
        epsilon_events=settings.privacy_epsilon_events,
        epsilon_users=settings.privacy_epsilon_users,
        max_cap=settings.privacy_max_cap,
        min_users=settings.privacy_min_users,
    )


def cache_variant(settings: Settings) -> str:
    """What besides the request and the data an answer depends on: code version and privacy."""
    return f"{__version__}:{noise_key_fingerprint(settings.require_secret())}:{privacy_params(settings)!r}"


def signals_resources(settings: Settings, engine: QueryEngine, store: EventSource, clock: Clock, gate: cache.Gate,
                      *, background: bool = False) -> list[SignalsResource]:
    """One resource per endpoint of the table, sharing this process's flights (each answer computed
    once) over the machine's compute slots. `background`: for the precompute process."""
    flights = Flights(gate, ComputeSlots(settings.run_dir / "compute", settings.slots), background=background)
    stale = StalePolicy(settings.stale_seconds, clock)
    budget = PrivacyBudget(gate, settings.privacy_budget, settings.privacy_shared_budget)
    # Nobody waits on background work, and it runs at a lower priority: it may take longer.
    deadline = settings.compute_deadline_seconds * (BACKGROUND_DEADLINE_FACTOR if background else 1)
    return [SignalsResource(endpoint, engine, store, clock, gate, flights,
                            cache_responses=settings.cache_responses, cache_variant=cache_variant(settings),
                            query_max_cells=settings.query_max_cells,
                            deadline_seconds=deadline, wait_seconds=settings.patience, stale=stale, budget=budget)
            for endpoint in ENDPOINTS]


def create_app(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    store: EventSource | None = None,
    accounts: AccountStore | None = None,
    engine: QueryEngine | None = None,
    gate: cache.Gate | None = None,
) -> falcon.App:
    settings = settings or Settings.from_env()
    secret = settings.require_secret()  # refused at start without SIGNALS_SECRET (keys the noise and the tokens)
    clock = clock or SystemClock()
    chosen = backend.choose(settings)
    if store is None or engine is None:
        answering_store, answering_engine = backend.answering(
            settings, chosen, Privacy(secret, privacy_params(settings)))
        store, engine = store or answering_store, engine or answering_engine
    accounts = accounts or AccountStore(settings.accounts_url, clock=clock)
    gate = gate or cache.connect(settings.redis_url, settings.redis_prefix, settings.redis_spin_microseconds / 1e6,
                                 settings.process_cache_mb << 20)

    # The order is the contract of the request path:
    # URL too long (414) -> query string not UTF-8 (400) -> a CORS preflight (204) -> who (401) -> this credential
    # here (403) -> may they (403) -> how often (429) -> resource: valid? (400) -> cached? -> compute
    client_address = ClientAddress(settings.trusted_proxies)
    tokens = TokenSigner(secret)
    middleware = (
        MetricsMiddleware(gate),
        RequestIdMiddleware(),
        AllowHeaderMiddleware(),
        UrlLengthMiddleware(),
        QueryEncodingMiddleware(),
        CorsMiddleware(settings.cors_max_age_seconds),
        AuthenticationMiddleware(CachedAuthenticator(accounts, settings.auth_cache_seconds,
                                                     stale_seconds=settings.auth_stale_seconds), gate, client_address,
                                 tokens, clock),
        TokenScopeMiddleware(gate),
        TierMiddleware(gate),
        RateLimitMiddleware(gate),
    )
    app: falcon.App[falcon.Request, falcon.Response] = falcon.App(middleware=middleware)
    app.req_options.keep_blank_qs_values = True  # '?limit=' is an error, not "use the default"
    app.req_options.strip_url_path_trailing_slash = True
    app.resp_options.secure_cookies_by_default = True
    app.set_error_serializer(serialize_problem)
    app.add_error_handler(Exception, handle_unexpected)

    # Every operation of the table (service/api/operations.py) at its path, served by its resource.
    resources = {
        **{resource.endpoint.name: resource for resource in signals_resources(settings, engine, store, clock, gate)},
        "account": AccountResource(PrivacyBudget(gate, settings.privacy_budget, settings.privacy_shared_budget), clock),
        "tokens": TokensResource(tokens, clock),
        **webhook_resources.resources(WebhookStore(accounts.db_engine, clock), clock,
                                      allow_private=settings.webhook_allow_private),
    }
    routed: set[str] = set()
    for operation in OPERATIONS:
        if operation.path not in routed:
            routed.add(operation.path)
            app.add_route(operation.path, resources[operation.resource],
                          **({"suffix": operation.suffix} if operation.suffix else {}))
    app.add_route("/api/v1/openapi", OpenApiResource(max_cells=settings.query_max_cells,
                                                      deadline=settings.compute_deadline_seconds))
    app.add_route("/api/v1/privacy", PrivacyResource())
    app.add_route("/healthz", HealthResource())
    app.add_route("/readyz", ReadinessResource(store, accounts, gate))
    return app
