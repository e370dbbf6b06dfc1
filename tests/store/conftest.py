"""service/store: the ingest contract, ingest and its crashes, value types, snapshots, the reader,
the shared snapshot, the demo data set and the `data` command line."""
