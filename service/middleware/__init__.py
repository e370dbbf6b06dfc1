"""The request path, one job per middleware, in this order (see service/app.py):
request id -> authentication (401) -> tier (403) -> [rate limit (429), issue 3] -> resource
(validation 400 -> [cache, issue 3] -> compute)."""
