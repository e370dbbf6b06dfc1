"""The HTTP API in process (Falcon's test client on the fixture data, the root conftest's `app`,
`client` and `keys`): every endpoint against the spec table (tests/support/spec_table.py), the
error shape, the OpenAPI document, parameters, authentication and tiers, as_of, compare and
intervals, /query, hostile input, the account endpoint; test_http_edge_cases.py over the real
gunicorn of the Procfile."""
