"""One flat-column rule (flatcolumns/, which connectors/columns.py re-exports): the API's CSV, the consumers' flattening of its
JSON and the served document's `x-signals-columns` name the same columns in the same order, on
every data operation, with compare and intervals."""

from __future__ import annotations

import csv
import io

import pytest

from connectors.columns import flat_record
from service.api.endpoints import ENDPOINTS
from tests.support.http import get, post_query

EXTRAS = {"previous", "change", "intervals"}  # the fields compare and intervals add
ARGUMENTS = {endpoint.name: dict(endpoint.example) for endpoint in ENDPOINTS}  # the table's example of each


def _documented(client, name: str) -> list[str]:
    paths = client.simulate_get("/api/v1/openapi").json["paths"]
    return next(op for methods in paths.values() for op in methods.values()
                if op["operationId"] == name)["x-signals-columns"]


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_the_consumers_columns_are_the_documents_in_its_order(client, keys, endpoint) -> None:
    takes = {p.name for p in endpoint.params}
    extras = {"compare": "previous_period", "intervals": "true"} if {"compare", "intervals"} <= takes else {}
    arguments = {**ARGUMENTS[endpoint.name], **extras}
    if endpoint.in_body:
        answer = post_query(client, keys["professional"], {**arguments, "intervals": True})
    else:
        answer = get(client, endpoint.path, keys["professional"], arguments)
    assert answer.status_code == 200, answer.text
    records = answer.json[endpoint.records_field]
    assert records, "the fixture has records for every request"
    columns = list(flat_record(records[0]))
    documented = _documented(client, endpoint.name)
    assert set(columns) <= set(documented)
    schema = endpoint.record_schema  # /query's dimensions (optional fields) come first, in group_by order
    dimensions = sum(c in set(schema["properties"]) - set(schema["required"]) - EXTRAS for c in columns)
    assert columns[dimensions:] == [c for c in documented if c in columns[dimensions:]]
    if extras:  # every nested field is there
        assert {c.split("_")[0] for c in columns} >= {"previous", "change", "intervals"}


def test_the_apis_csv_has_the_columns_the_consumers_flatten_its_json_to(client, keys) -> None:
    body = {**ARGUMENTS["query"], "compare": "previous_period", "intervals": True}
    records = post_query(client, keys["professional"], body).json["results"]
    answer = post_query(client, keys["professional"], {**body, "format": "csv"})
    rows = list(csv.reader(io.StringIO(answer.text.lstrip("\ufeff"))))
    assert rows[0] == list(flat_record(records[0]))
    def text(value: object) -> str:
        return "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)

    assert [[text(v) for v in flat_record(r).values()] for r in records] == rows[1:]
