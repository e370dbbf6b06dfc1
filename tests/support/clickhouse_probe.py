"""`python -m tests.support.clickhouse_probe chdb://<dir>`: what a ClickHouse store holds, as JSON.

Run in a process of its own: a chdb directory opens in one process at a time, and the test process
holds the session's. Prints the published generation and, per table, the published rows (count and
an order-independent hash of every column, generation included) and the rows of later generations.
"""

from __future__ import annotations

import json
import sys

from service.clickhouse.connection import ClickHouse
from service.clickhouse.landing import published_generation
from service.store import schema


def main() -> int:
    ch = ClickHouse(sys.argv[1])
    generation = published_generation(ch)
    tables = {}
    for table in schema.TABLES:
        columns = ", ".join([*schema.SCHEMAS[table], "generation"])
        row = ch.frame(f"SELECT countIf(generation <= {generation}) AS n, "
                       f"toString(sumIf(cityHash64({columns}), generation <= {generation})) AS h, "
                       f"countIf(generation > {generation}) AS unpublished FROM {table}").row(0)
        tables[table] = list(row)
    print(json.dumps({"generation": generation, "tables": tables}))
    ch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
