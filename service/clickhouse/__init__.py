"""Events in ClickHouse (SIGNALS_ENGINE=clickhouse): the connection, the tables and their set-up,
landing ingested rows, and the snapshot that readers hold. The engine that queries them is
service/engine/clickhouse/."""
