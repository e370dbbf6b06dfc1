"""HTTP concerns: the middleware (ids, auth, tier, rate limit), the error shape, the resources (parse, call, respond)."""
