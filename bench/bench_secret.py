"""SIGNALS_SECRET for the benchmarks, and every process they start: the environment's when it sets
one, else BENCH_SECRET. The product has no built-in secret (scripts/run.sh makes one per install);
a benchmark needs a fixed one, so that its numbers can be made again. BENCH_SECRET is the value the
measurements in docs/benchmarks.md and docs/privacy.md were made with (the product's public
development secret before it was removed), so they, and older code trees compared with
`--code DIR`, draw the same noise. A bench constant: it never serves an install."""

from __future__ import annotations

import os

BENCH_SECRET = "signals-development-secret-do-not-use-in-production"


def bench_secret() -> str:
    """The run's secret, put in this process's environment: `Settings.from_env()` and the processes
    started with a copy of `os.environ` see it too."""
    os.environ["SIGNALS_SECRET"] = os.environ.get("SIGNALS_SECRET") or BENCH_SECRET
    return os.environ["SIGNALS_SECRET"]
