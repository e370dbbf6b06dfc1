"""The event collector: `POST /api/v1/events` on its own port (SIGNALS_COLLECTOR_PORT), a durable log
of accepted events on this machine's disk, and the lander that folds the log into the store.

- `events`: a request body (NDJSON, one event per line) checked by the file-ingest contract
  (service/store/validate.py) into rows of the stored schema, each with its `event_id`.
- `log`: the append-only log of accepted batches (`<data>/events/log`), one file per batch,
  written completely and fsynced before the collector answers 202.
- `index`: the ids of landed events (and the names of landed batches), recorded with the
  generation that landed them, so a batch or an event is never landed twice.
- `lander`: one landing round: the log's batches into the store (a generation on the polars
  engine, inserts in a published generation on ClickHouse), duplicates dropped.
- `app`: the collector's Falcon app (ingest keys, limits, backpressure, problem+json).

docs/collector.md is the operator's and the client's description.
"""
