"""The ClickHouse engine through embedded ClickHouse (chdb, the root conftest's `chdb_dir`): the same
answers over HTTP as the Parquet store, the cost bound in SQL, ingest and its crashes, the deadline."""
