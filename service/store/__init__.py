"""The event store: hive-partitioned, immutable Parquet files plus a data generation number."""
