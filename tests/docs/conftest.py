"""The documents agree with the code: every README `curl` example runs against the demo data, and
every setting the processes read is in .env.example and the README."""
