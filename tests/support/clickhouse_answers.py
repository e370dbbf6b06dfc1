"""`python -m tests.support.clickhouse_answers chdb://<dir>`: a few endpoints' answers from a
ClickHouse store, as JSON (exact aggregates, and the privacy stage with a fixed secret).

Run in a process of its own, as tests/support/clickhouse_probe.py: a chdb directory opens in one
process at a time. The migration test compares them before and after `data clickhouse-init`.
"""

from __future__ import annotations

import json
import sys

from service.api.windows import hour_end
from service.clickhouse.connection import ClickHouse
from service.clickhouse.store import ClickHouseStore
from service.engine.clickhouse import ClickHouseEngine
from service.engine.requests import FlexibleQuery, GeoHeat, TopKeywords, Trending
from service.privacy import Privacy

REQUESTS = {
    "top_keywords": TopKeywords("30d", 10),
    "geo_heat": GeoHeat("30d", "region"),
    "trending": Trending("30d", "keyword", "suppressions", 10, 0.0),
    "query": FlexibleQuery("30d", {}, ("keyword", "domain"), None),
}


def main() -> int:
    ch = ClickHouse(sys.argv[1])
    snapshot = ClickHouseStore(ch).snapshot()
    assert snapshot.last_event is not None
    as_of = hour_end(snapshot.last_event)
    answers = {}
    for name, privacy in (("exact", Privacy.exact()), ("private", Privacy("a fixed test secret"))):
        engine = ClickHouseEngine(privacy)
        for endpoint, request in REQUESTS.items():
            frame = getattr(engine, endpoint)(snapshot, as_of, request)
            answers[f"{name} {endpoint}"] = frame.write_json()
    print(json.dumps(answers))
    ch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
