"""The collector's answers, every status (service/collector/app.py), over its Falcon app."""

from __future__ import annotations

import gzip
import json

from falcon import testing

from service.collector import log as event_log
from service.http.errors import PROBLEM_JSON
from service.settings import Settings
from tests.support.collector_events import keyword_change, make_client, many, ndjson, post, suppression


def problem(result: testing.Result, status: int) -> dict:
    assert result.status_code == status, result.text
    assert result.headers["content-type"].startswith(PROBLEM_JSON)
    body = result.json
    assert body["status"] == status and body["type"].startswith("urn:signals:problem:") and body["detail"]
    return body


def test_202_counts_accepted_and_rejected_lines_and_appends_the_accepted_ones(collector, ingest_key, data_dir):
    result = post(collector, ingest_key, ndjson([suppression("s1"), "nope", keyword_change("k1")]))
    assert result.status_code == 202
    assert result.json == {"accepted": 2, "duplicates": 0,
                           "rejected": [{"line": 2, "reason": "invalid JSON: Expecting value at column 1"}]}
    [batch] = event_log.batches(data_dir)
    assert batch.events == 2
    assert sorted(event_log.read(data_dir, batch)["event_id"].to_list()) == ["k1", "s1"]


def test_gzip_bodies_are_accepted(collector, ingest_key, data_dir):
    result = post(collector, ingest_key, gzip.compress(ndjson(many(100))), **{"Content-Encoding": "gzip"})
    assert result.status_code == 202 and result.json["accepted"] == 100


def test_a_retried_body_is_answered_as_duplicates_and_not_appended_again(collector, ingest_key, data_dir):
    body = ndjson(many(10))
    assert post(collector, ingest_key, body).json["accepted"] == 10
    again = post(collector, ingest_key, ndjson(many(12)))
    assert again.json == {"accepted": 2, "duplicates": 10, "rejected": []}
    assert sum(batch.events for batch in event_log.batches(data_dir)) == 12


def test_a_restarted_collector_still_knows_the_ids_waiting_in_the_log(collector_settings, collector_accounts,
                                                                       ingest_key):
    body = ndjson(many(5))
    assert post(make_client(collector_settings, collector_accounts), ingest_key, body).json["accepted"] == 5
    restarted = make_client(collector_settings, collector_accounts)
    assert post(restarted, ingest_key, body).json == {"accepted": 0, "duplicates": 5, "rejected": []}


def test_nothing_accepted_appends_nothing(collector, ingest_key, data_dir):
    result = post(collector, ingest_key, ndjson([suppression("s1", platform="netscape")]))
    assert result.status_code == 202 and result.json["accepted"] == 0 and len(result.json["rejected"]) == 1
    assert event_log.batches(data_dir) == []


def test_400_for_a_broken_gzip_body_and_an_empty_body(collector, ingest_key, data_dir):
    body = problem(post(collector, ingest_key, b"not gzip at all", **{"Content-Encoding": "gzip"}), 400)
    assert "not valid gzip" in body["detail"]
    cut = gzip.compress(ndjson(many(50)))[:-20]
    assert "gzip" in problem(post(collector, ingest_key, cut, **{"Content-Encoding": "gzip"}), 400)["detail"]
    assert "empty" in problem(post(collector, ingest_key, b"\n \n"), 400)["detail"]
    assert event_log.batches(data_dir) == []


def test_401_without_a_key_with_an_unknown_one_and_with_a_revoked_one(collector_settings, collector_accounts,
                                                                      ingest_key):
    client = make_client(collector_settings, collector_accounts)
    body = ndjson([suppression()])
    assert "no ingest key was sent" in problem(post(client, None, body), 401)["detail"]
    assert "not recognised" in problem(post(client, "sig_ingest_" + "A" * 40, body), 401)["detail"]
    assert "malformed" in problem(post(client, "garbage", body), 401)["detail"]
    collector_accounts.revoke_ingest_key(ingest_key)
    fresh = make_client(collector_settings, collector_accounts)  # (a process's cache keeps a key 10 s)
    assert "revoked" in problem(post(fresh, ingest_key, body), 401)["detail"]


def test_403_for_a_subscription_key(collector, subscription_key, data_dir):
    body = problem(post(collector, subscription_key, ndjson([suppression()])), 403)
    assert "ingest key" in body["detail"]
    assert event_log.batches(data_dir) == []


def test_413_for_a_body_over_the_limit_as_sent_or_unpacked(collector_settings, collector_accounts, ingest_key):
    settings = Settings(data_dir=collector_settings.data_dir, secret=collector_settings.secret,
                        collector_max_body_mb=1)
    client = make_client(settings, collector_accounts)
    big = ndjson(many(8000))  # about 2 MB
    assert len(big) > 1 << 20
    problem(post(client, ingest_key, big), 413)
    bomb = gzip.compress(b"\n" * (9 << 20))  # unpacks to more than 8 x 1 MB
    assert len(bomb) < 1 << 20
    problem(post(client, ingest_key, bomb, **{"Content-Encoding": "gzip"}), 413)


def test_415_for_another_content_type_or_encoding(collector, ingest_key):
    problem(collector.simulate_post("/api/v1/events", body=ndjson([suppression()]),
                                    headers={"Authorization": f"Bearer {ingest_key}",
                                             "Content-Type": "text/csv"}), 415)
    problem(post(collector, ingest_key, ndjson([suppression()]), **{"Content-Encoding": "br"}), 415)


def test_429_past_the_keys_rate_with_retry_after(collector_settings, collector_accounts, ingest_key):
    settings = Settings(data_dir=collector_settings.data_dir, secret=collector_settings.secret,
                        collector_requests_per_minute=2)
    client = make_client(settings, collector_accounts)
    other = collector_accounts.create_ingest_key("other")[0]
    for i in range(2):
        assert post(client, ingest_key, ndjson([suppression(f"s{i}")])).status_code == 202
    refused = post(client, ingest_key, ndjson([suppression("s9")]))
    problem(refused, 429)
    assert int(refused.headers["retry-after"]) >= 1
    assert post(client, other, ndjson([suppression("o1")])).status_code == 202  # per key


def test_503_with_retry_after_when_the_backlog_passes_its_bound(collector_settings, collector_accounts, ingest_key,
                                                                data_dir):
    settings = Settings(data_dir=data_dir, secret=collector_settings.secret, collector_max_backlog=10)
    client = make_client(settings, collector_accounts)
    assert post(client, ingest_key, ndjson(many(10))).status_code == 202
    refused = post(client, ingest_key, ndjson(many(1, start=100)))
    problem(refused, 503)
    assert int(refused.headers["retry-after"]) >= 1
    assert sum(batch.events for batch in event_log.batches(data_dir)) == 10


def test_503_when_the_log_cannot_be_written_and_nothing_is_answered_accepted(collector, ingest_key, data_dir,
                                                                             monkeypatch):
    def full(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(event_log, "append", full)
    problem(post(collector, ingest_key, ndjson([suppression("s1")])), 503)
    monkeypatch.undo()
    assert post(collector, ingest_key, ndjson([suppression("s1")])).json["accepted"] == 1  # not a duplicate


def test_an_ingest_key_reads_nothing_from_the_api(client, accounts):
    # `client` is the read API's test client (tests/conftest.py), `accounts` its accounts database.
    ingest = accounts.create_ingest_key("reader")[0]
    result = client.simulate_get("/api/v1/signals/top-keywords", headers={"Authorization": f"Bearer {ingest}"})
    assert result.status_code == 401
    assert json.loads(result.text)["type"] == "urn:signals:problem:unauthorized"


def test_posts_are_counted_in_the_metrics(collector, ingest_key):
    from prometheus_client import REGISTRY

    def value(outcome: str) -> float:
        return REGISTRY.get_sample_value("signals_collector_events_total", {"outcome": outcome}) or 0.0

    before = {outcome: value(outcome) for outcome in ("accepted", "rejected", "duplicate")}
    post(collector, ingest_key, ndjson([suppression("m1"), suppression("m1"), "broken", keyword_change("m2")]))
    assert {outcome: value(outcome) - before[outcome] for outcome in before} == \
        {"accepted": 2, "rejected": 1, "duplicate": 1}
    assert REGISTRY.get_sample_value("signals_collector_requests_total", {"status": "202"}) >= 1
