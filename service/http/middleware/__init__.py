"""The request path, one job per middleware, in this order (see service/app.py):
request id -> Allow lists -> URL length (414) -> query encoding (400) -> authentication (401)
-> tier (403) -> rate limit and cached body (429) -> resource (validation 400 -> cache -> compute)."""
