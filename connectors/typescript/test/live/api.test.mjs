// The client against the real API (tests/connectors/test_typescript.py serves it on 127.0.0.1 and
// runs this file): SIGNALS_TEST_API_URL, and SIGNALS_TEST_KEYS, a key per plan as JSON.
import assert from "node:assert/strict";
import { test } from "node:test";

import { PROBLEM, SignalsClient, SignalsError } from "../../dist/signals-client.js";

const baseUrl = process.env.SIGNALS_TEST_API_URL;
const keys = JSON.parse(process.env.SIGNALS_TEST_KEYS ?? "{}");
const skip = baseUrl ? false : "SIGNALS_TEST_API_URL is not set (tests/connectors/test_typescript.py sets it)";
const client = (token) => new SignalsClient({ baseUrl, token, sleep: async () => {} });

test("a ranking, its total and every page: the pages are the whole answer", { skip }, async () => {
  const api = client(keys.observer);
  const whole = (await api.topKeywords({ window: "30d", limit: 500 })).keywords;
  const first = await api.fetch("top_keywords", { window: "30d", limit: 2 });
  assert.equal(first.totalRows, whole.length);
  assert.ok(whole.length > 2 && first.nextPage !== null);
  const second = await api.next(first);
  assert.deepEqual(second.records, whole.slice(2, 4));
  assert.equal(second.records[0].rank, 3);
  const all = await api.fetchAll("top_keywords", { window: "30d", limit: 2 });
  assert.deepEqual(all.body.keywords, whole);
  assert.equal(all.pages, Math.ceil(whole.length / 2));
  assert.match(first.asOf, /^\d{4}-\d{2}-\d{2}T\d{2}:00:00Z$/);
  assert.equal(first.rateLimit.policy, "observer");
  assert.ok(first.privacyBudget === null || first.privacyBudget.limit > 0);
});

test("POST /query pages post the same body; CSV is text", { skip }, async () => {
  const api = client(keys.analyst);
  const body = { window: "30d", group_by: ["keyword", "platform"], limit: 4 };
  const whole = (await api.query({ ...body, limit: 1000 })).results;
  assert.deepEqual((await api.query(body, { allPages: true })).results, whole);
  const csv = await api.query({ ...body, format: "csv" }, { allPages: true });
  const lines = csv.trim().split(/\r?\n/);
  assert.equal(lines[0], "keyword,platform,suppressions,unique_users,events");
  assert.equal(lines.length, 1 + whole.length);
});

test("the second ask of an answer is a 304 with the remembered body", { skip }, async () => {
  const api = client(keys.observer);
  const first = await api.fetch("geo_heat", { window: "7d", level: "region" });
  assert.ok(first.etag);
  const again = await api.fetch("geo_heat", { window: "7d", level: "region" });
  assert.equal(again.status, 304);
  assert.equal(again.notModified, true);
  assert.deepEqual(again.body, first.body);
});

test("a bad parameter, a plan below the endpoint's, a wrong key: SignalsErrors in the API's words", { skip }, async () => {
  const refused = await client(keys.observer).topKeywords({ limit: 0 }).catch((e) => e);
  assert.ok(refused instanceof SignalsError);
  assert.equal(refused.status, 400);
  assert.equal(refused.type, "urn:signals:problem:invalid-request");
  assert.deepEqual(refused.errors.map((e) => e.name), ["limit"]);
  assert.match(refused.request_id, /\S/);
  const tier = await client(keys.observer).query({ window: "7d" }).catch((e) => e);
  assert.equal(tier.status, 403);
  assert.equal(tier.type, "urn:signals:problem:insufficient-tier");
  const wrong = await client("sig_live_" + "0".repeat(40)).account().catch((e) => e);
  assert.equal(wrong.status, 401);
});

test("the account and a webhook's life: path parameters and bodies", { skip }, async () => {
  const api = client(keys.analyst);
  assert.equal((await api.account()).plan, "analyst");
  const made = await api.createWebhook({ url: "http://127.0.0.1:8080/hooks/signals", window: "24h", dimension: "keyword",
                                         threshold_pct: 200, cooldown_minutes: 60 });
  assert.match(made.secret, /^whsec_/);
  const changed = await api.updateWebhook({ webhook_id: made.id, enabled: false });
  assert.equal(changed.enabled, false);
  assert.equal(await api.deleteWebhook({ webhook_id: made.id }), undefined);
  const gone = await api.getWebhook({ webhook_id: made.id }).catch((e) => e);
  assert.equal(gone.status, 404);
});

test("nobody listening: unreachable", { skip }, async () => {
  const api = new SignalsClient({ baseUrl: "http://127.0.0.1:9", token: "k", sleep: async () => {}, maxRetries: 1 });
  const error = await api.account().catch((e) => e);
  assert.equal(error.type, PROBLEM.unreachable);
  assert.equal(error.status, null);
});

test("a server mints a browser token with the key; the token works from its origin only", { skip }, async () => {
  const origin = "http://127.0.0.1:5173";
  const minted = await client(keys.observer).mintToken({ origins: [origin], ttl_seconds: 600, endpoints: ["top_keywords"] });
  assert.deepEqual([minted.origins, minted.endpoints], [[origin], ["top_keywords"]]);
  assert.ok(Number.isFinite(Date.parse(minted.expires_at))); // by the API's clock (the tests' is fixed)
  const page = new SignalsClient({ baseUrl, token: minted.token, headers: { Origin: origin } }); // as a browser sends it
  const reply = await page.fetch("top_keywords", { window: "7d", limit: 3 });
  assert.equal(reply.records.length, 3);
  assert.equal(reply.headers.get("access-control-allow-origin"), origin);
  const elsewhere = await page.geoHeat().catch((e) => e); // not among its endpoints
  assert.equal(elsewhere.status, 403);
  const noOrigin = await client(minted.token).topKeywords().catch((e) => e);
  assert.equal(noOrigin.status, 403);
  assert.equal(noOrigin.type, "urn:signals:problem:credential-not-allowed");
});
