"""The query engines: typed requests in, published frames out.

- `interface`: the protocols every engine and its backend implement (`Snapshot`, `QueryEngine`,
  `EventSource`, `Backend`);
- what both engines share: the request types (`requests`), the measures and their publication
  (`measures`, `ordering`, `geo_labels`), compare and intervals (`extras`, `compare`, `intervals`,
  `shapes`, `noise_std`, `growth`) and the /query cost bound (`cost`);
- `polars/`: the engine over the in-memory Parquet store, one module per endpoint (each also holds
  that endpoint's publication stage, which the ClickHouse engine calls with its own cells);
- `clickhouse/`: the engine over the ClickHouse tables (service/clickhouse/ holds the tables).

Importing this package loads nothing: gunicorn's master imports service/backend.py, which names
`interface`, and must not load polars before it forks.
"""
