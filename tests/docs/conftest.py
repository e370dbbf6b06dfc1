"""The documents agree with the code: every `curl` example of docs/api.md and the README runs
against the demo data, every setting the processes read is in .env.example, every link resolves,
and the import boundaries hold."""
