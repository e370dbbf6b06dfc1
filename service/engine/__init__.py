"""The query engines: typed requests in, published frames out.

- `interface`: the protocols every engine and its backend implement (`Snapshot`, `QueryEngine`,
  `EventSource`, `Backend`);
- what both engines share: the request types (`requests`), the measures and their order
  (`measures`, `cell_keys`, `ordering`, `geo_labels`), compare and intervals (`extras`, `compare`,
  `intervals`, `shapes`, `noise_std`, `growth`) and the /query cost bound (`cost`);
- `publication/`: each endpoint's publication stage, one module per endpoint (an engine's cells
  -> the privacy stage -> order and shape of the records), which both engines call with their
  own cells, so that both publish the same numbers;
- `polars/`: the engine over the mapped Parquet store's snapshot, one module per endpoint's
  aggregation;
- `clickhouse/`: the engine over the ClickHouse tables (service/clickhouse/ holds the tables).

Importing this package loads nothing: gunicorn's master imports service/backend.py, which names
`interface`, and must not load polars before it forks.
"""
