"""Settings: the only module that reads the environment. Every variable is in .env.example."""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

from cache import REDIS_SPIN_SECONDS
from envfields import Network, read_env
from envfields import env_field as _env  # each field names its variable; its type is the annotation

# Poll this long for Redis's answer before sleeping (0 = never); the default is the cache package's.
_DEFAULT_SPIN_MICROSECONDS = round(REDIS_SPIN_SECONDS * 1e6)

# Chosen from the measurements in docs/benchmarks.md ("The cost of a /query"): every query within
# the bound computes well within the deadline; gunicorn's timeout follows the deadline (gunicorn.conf.py).
QUERY_MAX_CELLS = 1_000_000
COMPUTE_DEADLINE_SECONDS = 20.0
# The privacy budget's defaults, epsilon a month (docs/privacy.md "The privacy budget").
PRIVACY_BUDGET = 200_000_000.0
PRIVACY_SHARED_BUDGET = 2_000_000_000.0
MAX_COMPUTE_DEADLINE_SECONDS = 600.0

ENGINES = ("polars", "clickhouse")

# How to make a secret (the messages of a missing SIGNALS_SECRET say it; scripts/run.sh does the same).
SECRET_COMMAND = "python3 -c 'import secrets; print(secrets.token_urlsafe(48))'"

# The name of the file beside the demo key where `scripts/run.sh` keeps the install's secret.
SECRET_FILE = "secret"


_HOST_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$")


def _is_host(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return bool(_HOST_NAME.match(text))


class SettingsError(ValueError):
    """A setting is missing or malformed; the message names the variable."""


@dataclasses.dataclass(frozen=True)
class Settings:
    data_dir: Path = _env("SIGNALS_DATA_DIR", Path("./data"))
    accounts_url: str = _env("SIGNALS_ACCOUNTS_URL", "")  # filled from data_dir when empty
    redis_url: str | None = _env("REDIS_URL", None)
    redis_prefix: str = _env("SIGNALS_REDIS_PREFIX", "signals:")
    redis_spin_microseconds: int = _env("SIGNALS_REDIS_SPIN_MICROSECONDS", _DEFAULT_SPIN_MICROSECONDS)
    # address the web process listens on; 0.0.0.0 (or ::) exposes it
    host: str = _env("SIGNALS_HOST", "127.0.0.1")
    port: int = _env("PORT", 8000)
    environment: str = _env("SIGNALS_ENV", "development", lower=True)  # development | production
    # Keys the privacy noise, the hash of user ids and the browser tokens' signatures. No default:
    # empty means not set, and the processes that use it refuse to start (`require_secret`);
    # production refuses at once.
    secret: str = _env("SIGNALS_SECRET", "", secret=True)
    web_concurrency: int = _env("WEB_CONCURRENCY", 0)  # 0 = size for the machine (gunicorn.conf.py)
    # requests each web worker serves at once (threads; gunicorn.conf.py)
    web_threads: int = _env("SIGNALS_WEB_THREADS", 8)
    # Seconds a client may leave its request (headers or body) or our answer unread before its
    # connection is answered 408 and closed (service/server/gunicorn_worker.py).
    client_timeout_seconds: float = _env("SIGNALS_CLIENT_TIMEOUT_SECONDS", 5.0)
    # accepted keys are remembered this long per worker (0 = off)
    auth_cache_seconds: int = _env("SIGNALS_AUTH_CACHE_SECONDS", 10)
    # While the accounts database is down, keys accepted this recently keep working (service/accounts/cached.py).
    auth_stale_seconds: int = _env("SIGNALS_AUTH_STALE_SECONDS", 600)
    # Seconds a browser may keep a CORS preflight's answer (Access-Control-Max-Age; service/http/middleware/cors.py):
    # 7200 is the most Chromium keeps one (Firefox: 86400).
    cors_max_age_seconds: int = _env("SIGNALS_CORS_MAX_AGE_SECONDS", 7200)
    # off: every request is computed (rate limits still apply)
    cache_responses: bool = _env("SIGNALS_CACHE_RESPONSES", True)
    # cached bodies each worker keeps in its memory (served alone while Redis is down)
    process_cache_mb: int = _env("SIGNALS_PROCESS_CACHE_MB", 64)
    # Privacy (docs/privacy.md): budget per measure, per-user caps per cell, minimum users k.
    # service/privacy/params.py's PrivacyParams takes its defaults from these.
    privacy_epsilon_suppressions: float = _env("SIGNALS_PRIVACY_EPSILON_SUPPRESSIONS", 1.0)
    privacy_epsilon_events: float = _env("SIGNALS_PRIVACY_EPSILON_EVENTS", 1.0)
    privacy_epsilon_users: float = _env("SIGNALS_PRIVACY_EPSILON_USERS", 1.0)
    # the most one user adds to one cell's sum (caps are chosen per cell)
    privacy_max_cap: int = _env("SIGNALS_PRIVACY_MAX_CAP", 10_000)
    # Serve every answer from the release (service/release/, docs/privacy.md "Privacy by release")
    # instead of drawing noise per cell: off while the release replaces the per-cell stage.
    privacy_release: bool = _env("SIGNALS_PRIVACY_RELEASE", False)
    # How long after an hour ends the lander releases it (late events of the hour land meanwhile).
    privacy_release_delay_seconds: int = _env("SIGNALS_PRIVACY_RELEASE_DELAY_SECONDS", 30)
    privacy_min_users: int = _env("SIGNALS_PRIVACY_MIN_USERS", 10)
    # The privacy budget (service/privacy/budget.py): epsilon one subscription may be charged a
    # calendar month (0 = no budget: every answer served), and the shared ledger's, which pays
    # once for the answers precompute makes ready for everyone.
    privacy_budget: float = _env("SIGNALS_PRIVACY_BUDGET", PRIVACY_BUDGET)
    privacy_shared_budget: float = _env("SIGNALS_PRIVACY_SHARED_BUDGET", PRIVACY_SHARED_BUDGET)
    # networks whose X-Forwarded-For is believed (load balancers)
    trusted_proxies: tuple[Network, ...] = _env("SIGNALS_TRUSTED_PROXIES", ())
    # /query cost (engine/cost.py): the most cells (groups) a query may aggregate, by its upper bound.
    query_max_cells: int = _env("SIGNALS_QUERY_MAX_CELLS", QUERY_MAX_CELLS)
    # The work a computation may do before it is stopped with 503: the CPU time of this many seconds on
    # every core, or five times this on the clock (service/answers/deadline.py).
    compute_deadline_seconds: float = _env("SIGNALS_COMPUTE_DEADLINE_SECONDS", COMPUTE_DEADLINE_SECONDS)
    # Answers computed at once on this machine, across all its processes (0 = one per core;
    # service/answers/compute_slots.py); the rest wait in a queue in front of them.
    compute_slots: int = _env("SIGNALS_COMPUTE_SLOTS", 0)
    # Seconds a request waits for its answer to be computed (queue and computation) before it is
    # answered 503 with a Retry-After from the queue; 0 = the compute deadline + 1 s (service/answers/flights.py).
    wait_seconds: float = _env("SIGNALS_WAIT_SECONDS", 0.0)
    # Seconds after the hour turns (or data lands) during which a request may get its previous
    # answer, labelled stale, while the current one computes; 0 = never (service/answers/stale.py).
    stale_seconds: float = _env("SIGNALS_STALE_SECONDS", 600.0)
    # The precompute process (service/answers/precompute.py): how many of the most asked requests it
    # makes ready when the hour turns or data lands.
    precompute_top: int = _env("SIGNALS_PRECOMPUTE_TOP", 200)
    # Where this machine's processes of the deployment meet: compute slots, metrics files.
    run_dir: Path = _env("SIGNALS_RUN_DIR", Path(""))  # empty: <SIGNALS_DATA_DIR>/run
    # Prometheus metrics of every process, served by the web process's master on this port
    # (SIGNALS_HOST; 0 = not served). Not the API's port: metrics are for the operator.
    metrics_port: int = _env("SIGNALS_METRICS_PORT", 9464)
    log_level: str = _env("SIGNALS_LOG_LEVEL", "info", lower=True)
    # The worker (service/webhooks/): seconds between evaluation rounds (new data also starts one).
    worker_interval_seconds: float = _env("SIGNALS_WORKER_INTERVAL_SECONDS", 60.0)
    # Development only: webhook URLs may be http and reach loopback/private addresses.
    webhook_allow_private: bool = _env("SIGNALS_WEBHOOK_ALLOW_PRIVATE", False)
    # Where events live and what computes on them: polars over the Parquet store in data_dir, or
    # ClickHouse at clickhouse_url (service/clickhouse/; docs/architecture.md "ClickHouse").
    engine: str = _env("SIGNALS_ENGINE", "polars", lower=True)  # polars | clickhouse
    # clickhouse-connect DSN: http(s)://user:password@host:8123/database or chdb://<dir>
    clickhouse_url: str = _env("SIGNALS_CLICKHOUSE_URL", "")
    # The event collector (service/collector/, docs/collector.md): its port (on SIGNALS_HOST), the
    # lateness window (events older than this many hours are refused), the largest body (MB, as
    # sent; gzip bodies also at most 8 times that unpacked), requests per minute per ingest key (per
    # collector process; shared by all of them through Redis with REDIS_URL),
    # the backlog (events appended but not landed) past which posts get 503, and the lander's
    # seconds between rounds.
    collector_port: int = _env("SIGNALS_COLLECTOR_PORT", 8002)
    late_hours: int = _env("SIGNALS_LATE_HOURS", 48)
    collector_max_body_mb: int = _env("SIGNALS_COLLECTOR_MAX_BODY_MB", 16)
    collector_requests_per_minute: int = _env("SIGNALS_COLLECTOR_REQUESTS_PER_MINUTE", 6000)
    collector_max_backlog: int = _env("SIGNALS_COLLECTOR_MAX_BACKLOG", 5_000_000)
    lander_interval_seconds: float = _env("SIGNALS_LANDER_INTERVAL_SECONDS", 10.0)
    # Where accepted batches wait for the lander: "disk" (the log directory on this machine's disk,
    # <data>/events/log) or a RabbitMQ URL (amqp://user:password@host:5672/vhost, amqps://...): a
    # quorum queue, SIGNALS_COLLECTOR_QUEUE, the collector answering 202 once the broker confirmed
    # (service/collector/carrier.py; docs/operations.md "Past one machine's disk").
    collector_log: str = _env("SIGNALS_COLLECTOR_LOG", "disk")
    collector_queue: str = _env("SIGNALS_COLLECTOR_QUEUE", "signals.events")

    def __post_init__(self) -> None:
        if not str(self.run_dir) or str(self.run_dir) == ".":
            object.__setattr__(self, "run_dir", self.data_dir / "run")
        if not self.accounts_url:
            object.__setattr__(self, "accounts_url", f"sqlite:///{(self.data_dir / 'accounts.db').as_posix()}")
        if not _is_host(self.host):
            raise SettingsError(f"SIGNALS_HOST must be an IP address or a host name, got {self.host!r}")
        if self.environment not in ("development", "production"):
            raise SettingsError("SIGNALS_ENV must be 'development' or 'production'")
        if self.environment == "production" and not self.secret:
            raise SettingsError("SIGNALS_SECRET must be set in production (SIGNALS_ENV=production): a long random "
                                "value of your own, the same for every process of the deployment, e.g. what "
                                f"{SECRET_COMMAND} prints")
        for name in ("privacy_epsilon_suppressions", "privacy_epsilon_events", "privacy_epsilon_users"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):  # noise can be made smaller, never switched off
                raise SettingsError(f"SIGNALS_{name.upper()} must be a positive finite number, got {value}")
        if not 0 <= self.auth_stale_seconds <= 86_400:
            raise SettingsError("SIGNALS_AUTH_STALE_SECONDS must be between 0 and 86400")
        if not 0 <= self.cors_max_age_seconds <= 86_400:
            raise SettingsError("SIGNALS_CORS_MAX_AGE_SECONDS must be between 0 and 86400")
        if not 1 <= self.web_threads <= 256:
            raise SettingsError("SIGNALS_WEB_THREADS must be between 1 and 256")
        if not (math.isfinite(self.client_timeout_seconds) and 0.5 <= self.client_timeout_seconds <= 300):
            raise SettingsError("SIGNALS_CLIENT_TIMEOUT_SECONDS must be between 0.5 and 300")
        if not 1 <= self.process_cache_mb <= 65_536:
            raise SettingsError("SIGNALS_PROCESS_CACHE_MB must be between 1 and 65536")
        if not 0 <= self.redis_spin_microseconds <= 10_000:
            raise SettingsError("SIGNALS_REDIS_SPIN_MICROSECONDS must be between 0 and 10000")
        deadline = self.compute_deadline_seconds
        if not (math.isfinite(deadline) and 0 < deadline <= MAX_COMPUTE_DEADLINE_SECONDS):
            raise SettingsError(f"SIGNALS_COMPUTE_DEADLINE_SECONDS must be more than 0 and at most "
                                f"{MAX_COMPUTE_DEADLINE_SECONDS:g}, got {deadline}")
        if not (math.isfinite(self.worker_interval_seconds) and 1 <= self.worker_interval_seconds <= 86_400):
            raise SettingsError("SIGNALS_WORKER_INTERVAL_SECONDS must be between 1 and 86400")
        if self.webhook_allow_private and self.environment == "production":
            raise SettingsError("SIGNALS_WEBHOOK_ALLOW_PRIVATE is a development setting; production refuses it "
                                "(webhooks may only reach public https addresses)")
        if not 0 <= self.compute_slots <= 1024:
            raise SettingsError("SIGNALS_COMPUTE_SLOTS must be between 0 (one per core) and 1024")
        for name in ("wait_seconds", "stale_seconds"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value <= 3600):
                raise SettingsError(f"SIGNALS_{name.upper()} must be between 0 and 3600, got {value}")
        if not 1 <= self.precompute_top <= 100_000:
            raise SettingsError("SIGNALS_PRECOMPUTE_TOP must be between 1 and 100000")
        if not 0 <= self.metrics_port <= 65_535:
            raise SettingsError("SIGNALS_METRICS_PORT must be a port number (0 = not served)")
        if self.engine not in ENGINES:
            raise SettingsError(f"SIGNALS_ENGINE must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.engine == "clickhouse" and not self.clickhouse_url.startswith(("http://", "https://", "chdb://")):
            raise SettingsError("SIGNALS_ENGINE=clickhouse needs SIGNALS_CLICKHOUSE_URL: "
                                "http(s)://user:password@host:8123/database or chdb://<directory>")
        if not 1 <= self.collector_port <= 65_535:
            raise SettingsError("SIGNALS_COLLECTOR_PORT must be a port number")
        if not 1 <= self.late_hours <= 24 * 30:
            raise SettingsError("SIGNALS_LATE_HOURS must be between 1 and 720")
        if not 1 <= self.collector_max_body_mb <= 1024:
            raise SettingsError("SIGNALS_COLLECTOR_MAX_BODY_MB must be between 1 and 1024")
        if self.collector_requests_per_minute < 1:
            raise SettingsError("SIGNALS_COLLECTOR_REQUESTS_PER_MINUTE must be at least 1")
        if self.collector_max_backlog < 1:
            raise SettingsError("SIGNALS_COLLECTOR_MAX_BACKLOG must be at least 1")
        if not (math.isfinite(self.lander_interval_seconds) and 0.1 <= self.lander_interval_seconds <= 50):
            raise SettingsError("SIGNALS_LANDER_INTERVAL_SECONDS must be between 0.1 and 50 (events land within a "
                                "minute)")
        for name in ("privacy_budget", "privacy_shared_budget"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value <= 1e12):
                raise SettingsError(f"SIGNALS_{name.upper()} must be a number of epsilon from 0 to 1e12, got {value!r}")
        if self.collector_log != "disk" and not self.collector_log.startswith(("amqp://", "amqps://")):
            raise SettingsError("SIGNALS_COLLECTOR_LOG must be 'disk' or a RabbitMQ URL (amqp://user:password@host:5672/"
                                "vhost or amqps://...)")
        if not re.fullmatch(r"[A-Za-z0-9._:-]{1,200}", self.collector_queue):
            raise SettingsError("SIGNALS_COLLECTOR_QUEUE must be 1 to 200 letters, digits and . _ : -")
        for name, minimum in (("privacy_max_cap", 1), ("privacy_min_users", 1), ("query_max_cells", 1),
                              ("privacy_release_delay_seconds", 0)):
            if getattr(self, name) < minimum:
                raise SettingsError(f"SIGNALS_{name.upper()} must be at least {minimum}")

    @property
    def slots(self) -> int:
        """Compute slots of this machine (SIGNALS_COMPUTE_SLOTS, 0 = one per core)."""
        return self.compute_slots or (os.cpu_count() or 1)

    @property
    def patience(self) -> float:
        """Seconds a request waits for its answer (SIGNALS_WAIT_SECONDS; 0 = the compute deadline and
        a second more: a computation alone on the machine that starts at once ends, answered or stopped,
        first; one slowed by its neighbours goes on, and its waiters are told when it will be there)."""
        return self.wait_seconds or self.compute_deadline_seconds + 1.0

    def require_secret(self) -> str:
        """SIGNALS_SECRET, for the processes that use it (the web app: noise and browser tokens; the
        worker, precompute, `data release` and, releasing, the lander: noise; the collector, `data
        demo` and `data ingest`: the user ids' hash). Not set: SettingsError, saying how to get one
        (no secret in the code ever stands in for it)."""
        if self.secret:
            return self.secret
        kept = self.data_dir / SECRET_FILE
        if kept.is_file():
            how = (f"This install's, made by ./scripts/run.sh, is kept in {kept}: "
                   f'export SIGNALS_SECRET="$(cat {kept})"')
        else:
            how = (f"./scripts/run.sh makes one for this install on its first run (kept in {kept}) and sets it; "
                   f"to start this process yourself, set SIGNALS_SECRET to a long random value, the same for "
                   f"every process of the deployment, e.g. what {SECRET_COMMAND} prints")
        raise SettingsError("SIGNALS_SECRET is not set: it keys the privacy noise, the hash of user ids and the "
                            f"browser tokens, and no secret in the code stands in for it. {how}.")

    @property
    def uses_clickhouse(self) -> bool:
        return self.engine == "clickhouse"

    @property
    def collector_carried(self) -> bool:
        """Accepted batches go to RabbitMQ (SIGNALS_COLLECTOR_LOG is a URL), not to the log directory."""
        return self.collector_log != "disk"

    @property
    def collector_bind(self) -> str:
        """host:port of the collector (SIGNALS_HOST, SIGNALS_COLLECTOR_PORT), as gunicorn takes it."""
        return f"[{self.host}]:{self.collector_port}" if ":" in self.host else f"{self.host}:{self.collector_port}"

    @property
    def bind(self) -> str:
        """host:port as gunicorn takes it (an IPv6 address in brackets)."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Each field from its variable (`_env`): unset or empty = the field's default."""
        return cls(**read_env(cls, environ, SettingsError))

