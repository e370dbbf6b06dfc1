"""One connection to the ClickHouse database that holds the events (SIGNALS_CLICKHOUSE_URL).

The DSN is clickhouse-connect's: `http(s)://user:password@host:8123/database` for a server or a
cluster, `chdb://<directory>` for embedded ClickHouse (chdb) running inside this process. The same
client API and the same SQL serve both; results come back as Arrow, read by polars without copies.

The client is opened on first use, never at import: gunicorn forks its workers from a master that
must not hold an open chdb engine (or any other native thread pool). Every query carries
`max_execution_time` when a deadline is set, so the server stops a query the caller has given up
on (service/answers/deadline.py stops the caller).

chdb runs one embedded server per process, on one directory, and a directory can be open in one
process at a time: `open_error` turns chdb's refusal into a message that says which process to stop.
"""

from __future__ import annotations

import contextlib
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from service.answers.deadline import DeadlineExceeded, remaining
from service.store.unavailable import BackendUnavailable

CHDB_SCHEME = "chdb://"
DEFAULT_DATABASE = "signals"
TIMEOUT_EXCEEDED = 159  # ClickHouse's error code for a query stopped by max_execution_time


class ClickHouseUnavailable(BackendUnavailable):
    """The database cannot be opened or reached; the message says why and what to do."""


def is_embedded(url: str) -> bool:
    return url.startswith(CHDB_SCHEME)


def chdb_directory(url: str) -> str:
    return url.removeprefix(CHDB_SCHEME).split("?", 1)[0]


def database_of(url: str) -> str:
    """The database the DSN names (the path of an http URL); `signals` for chdb and when none is named."""
    if is_embedded(url):
        query = urllib.parse.parse_qs(url.partition("?")[2])
        return query.get("database", [DEFAULT_DATABASE])[0]
    path = urllib.parse.urlsplit(url).path.strip("/")
    return path or DEFAULT_DATABASE


class ClickHouse:
    """A lazily opened clickhouse-connect client on one database, shared by a process's threads."""

    def __init__(self, url: str, *, database: str | None = None, deadline_seconds: float | None = None) -> None:
        self.url = url
        self.database = database or database_of(url)
        self.deadline_seconds = deadline_seconds
        self._client: Any = None
        self._lock = threading.Lock()
        # Embedded ClickHouse runs in this process: its queries are made one at a time (the web
        # worker serves requests from several threads; a server takes them concurrently).
        self._queries = threading.Lock() if is_embedded(url) else contextlib.nullcontext()

    @property
    def embedded(self) -> bool:
        return is_embedded(self.url)

    def describe(self) -> str:
        """The DSN without its password (for logs and messages)."""
        if self.embedded:
            return f"chdb://{chdb_directory(self.url)} (database {self.database})"
        parts = urllib.parse.urlsplit(self.url)
        host = parts.hostname or ""
        return f"{parts.scheme}://{host}{':' + str(parts.port) if parts.port else ''}/{self.database}"

    def _open(self) -> Any:
        import clickhouse_connect

        try:
            if self.embedded:
                admin = clickhouse_connect.get_client(dsn=CHDB_SCHEME + chdb_directory(self.url))
            else:
                admin = clickhouse_connect.get_client(dsn=self.url, database="default")
            admin.command(f"CREATE DATABASE IF NOT EXISTS {quote_name(self.database)}")
            if self.embedded:
                return clickhouse_connect.get_client(dsn=CHDB_SCHEME + chdb_directory(self.url), database=self.database)
            return clickhouse_connect.get_client(dsn=self.url, database=self.database)
        except Exception as exc:
            raise ClickHouseUnavailable(open_error(self.url, exc)) from exc

    @property
    def client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._open()
        return self._client

    def close(self) -> None:
        """Close the client (releases a chdb directory when no other client of this process holds it)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _settings(self, settings: Mapping[str, Any] | None) -> dict[str, Any]:
        """The query's settings: max_execution_time is the time left of the request's deadline
        (service/answers/deadline.py), else the connection's deadline; ClickHouse stops the query then."""
        merged = dict(settings or {})
        limits = [limit for limit in (self.deadline_seconds, remaining()) if limit]
        if limits and "max_execution_time" not in merged:
            merged["max_execution_time"] = round(min(limits), 3)
        return merged

    def frame(self, sql: str, parameters: Mapping[str, Any] | None = None,
              settings: Mapping[str, Any] | None = None) -> pl.DataFrame:
        """The result of one SELECT as a polars frame (through Arrow)."""
        try:
            with self._queries:
                table = self.client.query_arrow(sql, parameters=dict(parameters or {}),
                                                settings=self._settings(settings))
        except Exception as exc:
            raise _translated(exc, self.deadline_seconds) from exc
        return pl.from_arrow(table)  # type: ignore[return-value]

    def command(self, sql: str, parameters: Mapping[str, Any] | None = None,
                settings: Mapping[str, Any] | None = None) -> Any:
        try:
            with self._queries:
                return self.client.command(sql, parameters=dict(parameters or {}), settings=self._settings(settings))
        except Exception as exc:
            raise _translated(exc, self.deadline_seconds) from exc

    def insert(self, table: str, frame: pl.DataFrame, columns: Sequence[str] | None = None,
               settings: Mapping[str, Any] | None = None) -> None:
        """Insert the rows; into a Distributed table (a cluster), synchronously: the call returns once
        every row is on its shard, so a landing is published only after its rows are in place.
        `settings`: more of the insert's settings (the lander's `insert_deduplication_token`)."""
        arrow = frame.select(columns).to_arrow() if columns else frame.to_arrow()
        with self._queries:
            self.client.insert_arrow(table, arrow, settings={"insert_distributed_sync": 1, **(settings or {})})


def _translated(exc: Exception, deadline: float | None) -> BaseException:
    if getattr(exc, "code", None) == TIMEOUT_EXCEEDED or "TIMEOUT_EXCEEDED" in str(exc):
        return DeadlineExceeded(deadline)
    return exc


def open_error(url: str, exc: Exception) -> str:
    text = str(exc)
    if is_embedded(url) and ("EmbeddedServer" in text or "already" in text or "lock" in text.lower()):
        return (f"the chdb directory {chdb_directory(url)} is held by another process (chdb is embedded: one "
                f"process at a time may open it). Stop the web process or worker that has it open (or the "
                f"running ingest) and try again; to ingest while serving, use a ClickHouse server "
                f"(SIGNALS_CLICKHOUSE_URL=http://...). chdb said: {text}")
    return f"cannot open ClickHouse at {url if is_embedded(url) else urllib.parse.urlsplit(url).hostname}: {text}"


def quote_name(name: str) -> str:
    """A ClickHouse identifier in backquotes."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"
