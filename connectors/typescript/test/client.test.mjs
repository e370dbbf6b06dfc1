// The client against a fake fetch: its methods, the bearer, arguments, answers, errors, ETags, CSV.
import assert from "node:assert/strict";
import { test } from "node:test";

import { METHOD_NAMES, OPERATIONS, PROBLEM, Reply, SignalsClient, SignalsError } from "../dist/signals-client.js";
import { API, TOP, fakeFetch, json, keyword, notModified, problem, recordedSleep } from "./fake.mjs";

const client = (fetch, options = {}) => new SignalsClient({ baseUrl: API, token: "sig_live_key", fetch,
                                                          sleep: recordedSleep().sleep, ...options });

test("every operation of the table is a method named by its operationId in camelCase", () => {
  const api = client(fakeFetch(json({})).fetch);
  assert.deepEqual(Object.keys(METHOD_NAMES), Object.keys(OPERATIONS));
  for (const [id, name] of Object.entries(METHOD_NAMES)) {
    assert.equal(name, id.replace(/_(.)/g, (_, c) => c.toUpperCase()));
    assert.equal(typeof api[name], "function", name);
  }
  assert.equal(METHOD_NAMES.top_keywords, "topKeywords");
  assert.equal(METHOD_NAMES.list_webhook_deliveries, "listWebhookDeliveries");
});

test("a GET sends the bearer and its query, and gives the JSON body", async () => {
  const fake = fakeFetch(json(TOP([keyword(1)])));
  const body = await client(fake.fetch).topKeywords({ window: "7d", limit: 10, intervals: true, as_of: undefined });
  assert.deepEqual(body.keywords, [keyword(1)]);
  const [sent] = fake.requests;
  assert.equal(sent.method, "GET");
  assert.equal(sent.url, `${API}/api/v1/signals/top-keywords?window=7d&limit=10&intervals=true`);
  assert.equal(sent.headers.authorization, "Bearer sig_live_key");
  assert.equal(sent.headers.accept, "application/json");
  assert.match(sent.headers["user-agent"], /^signals-typescript-client\/0\.1\.0 node\//);
});

test("a token function is asked before every request", async () => {
  let issued = 0;
  const fake = fakeFetch(json(TOP([])));
  const api = client(fake.fetch, { token: async () => `tok_${++issued}` });
  await api.topKeywords();
  await api.geoHeat({ window: "24h" });
  assert.deepEqual(fake.requests.map((r) => r.headers.authorization), ["Bearer tok_1", "Bearer tok_2"]);
});

test("POST /query sends its arguments as the JSON body; path parameters go in the path", async () => {
  const fake = fakeFetch(json({ window: "7d", bucket: null, group_by: ["country"], results: [], disclaimer: "e" }),
                         json({ id: "wh_1" }), new Response(null, { status: 204 }));
  const api = client(fake.fetch);
  await api.query({ window: "7d", group_by: ["country"], filters: { countries: ["US"] } });
  await api.updateWebhook({ webhook_id: "wh 1/2", enabled: false });
  assert.equal(await api.deleteWebhook({ webhook_id: "wh_1" }), undefined);
  const [query, update, remove] = fake.requests;
  assert.equal(query.method, "POST");
  assert.equal(query.url, `${API}/api/v1/signals/query`);
  assert.equal(query.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(query.body), { window: "7d", group_by: ["country"], filters: { countries: ["US"] } });
  assert.equal(update.method, "PATCH");
  assert.equal(update.url, `${API}/api/v1/account/webhooks/wh%201%2F2`);
  assert.deepEqual(JSON.parse(update.body), { enabled: false });
  assert.equal(remove.method, "DELETE");
});

test("a missing path parameter is refused before any request", async () => {
  const fake = fakeFetch(json({}));
  await assert.rejects(client(fake.fetch).getWebhook({}), (error) =>
    error instanceof SignalsError && error.status === 400 && error.errors[0].name === "webhook_id");
  assert.equal(fake.requests.length, 0);
});

test("an unknown operation is a SignalsError, not a request", async () => {
  const fake = fakeFetch(json({}));
  await assert.rejects(client(fake.fetch).fetch("platform_heat"), (error) => error.type === PROBLEM.unknownOperation);
  assert.equal(fake.requests.length, 0);
});

test("a problem+json answer is a SignalsError with the API's members", async () => {
  const errors = [{ name: "limit", reason: "0 is out of bounds; expected an integer from 1 to 500" }];
  const fake = fakeFetch(problem(400, "invalid-request", { errors, title: "Invalid or missing parameter" }));
  const error = await client(fake.fetch).topKeywords({ limit: 0 }).catch((e) => e);
  assert.ok(error instanceof SignalsError && error instanceof Error);
  assert.equal(error.name, "SignalsError");
  assert.equal(error.type, "urn:signals:problem:invalid-request");
  assert.equal(error.title, "Invalid or missing parameter");
  assert.equal(error.status, 400);
  assert.equal(error.detail, "the invalid-request detail");
  assert.deepEqual(error.errors, errors);
  assert.equal(error.request_id, "req-1");
  assert.equal(error.problem.disclaimer, "estimates");
  assert.equal(error.message, "400 Invalid or missing parameter: the invalid-request detail");
});

test("an error answer that is not problem+json keeps its status and first words", async () => {
  const fake = fakeFetch(new Response("<html>Bad gateway</html>", { status: 502, statusText: "Bad Gateway" }));
  const error = await client(fake.fetch).account().catch((e) => e);
  assert.equal(error.type, "about:blank");
  assert.equal(error.status, 502);
  assert.equal(error.title, "Bad Gateway");
  assert.equal(error.detail, "<html>Bad gateway</html>");
});

test("a success that is not JSON is an unexpected answer", async () => {
  const fake = fakeFetch(new Response("<html>captive portal</html>", { status: 200, headers: { "Content-Type": "text/html" } }));
  const error = await client(fake.fetch).account().catch((e) => e);
  assert.equal(error.type, PROBLEM.unexpectedAnswer);
});

test("the reply says what the headers say", async () => {
  const headers = {
    ETag: '"abc"', "X-Signals-As-Of": "2026-03-10T12:00:00Z", "Signals-Total-Rows": "390",
    Link: '</api/v1/signals/top-keywords?window=7d&limit=2&offset=2&as_of=2026-03-10T12:00:00Z>; rel="next"',
    RateLimit: '"professional";r=299;t=60', "X-Request-ID": "req-9",
    "Signals-Privacy-Budget": 'remaining=199998.250, limit=200000000.000, spent=1.750, charged=1.750, renews="2026-04-01T00:00:00Z"',
  };
  const reply = await client(fakeFetch(json(TOP([keyword(1), keyword(2)]), { headers })).fetch)
    .fetch("top_keywords", { window: "7d", limit: 2 });
  assert.ok(reply instanceof Reply);
  assert.equal(reply.status, 200);
  assert.equal(reply.etag, '"abc"');
  assert.equal(reply.asOf, "2026-03-10T12:00:00Z");
  assert.equal(reply.totalRows, 390);
  assert.equal(reply.nextPage, "/api/v1/signals/top-keywords?window=7d&limit=2&offset=2&as_of=2026-03-10T12:00:00Z");
  assert.deepEqual(reply.rateLimit, { policy: "professional", remaining: 299, reset: 60 });
  assert.deepEqual(reply.privacyBudget, { remaining: 199998.25, limit: 200000000, spent: 1.75, charged: 1.75,
                                          renews: "2026-04-01T00:00:00Z" });
  assert.equal(reply.requestId, "req-9");
  assert.deepEqual(reply.records.map((r) => r.rank), [1, 2]);
  assert.equal(reply.notModified, false);
});

test("the ETag is sent back and a 304 gives the remembered body, a copy", async () => {
  const fake = fakeFetch(json(TOP([keyword(1)]), { headers: { ETag: '"v1"' } }), notModified('"v1"'));
  const api = client(fake.fetch);
  const first = await api.topKeywords({ window: "7d" });
  first.keywords.push("changed by the caller");
  const again = await api.fetch("top_keywords", { window: "7d" });
  assert.equal(fake.requests[0].headers["if-none-match"], undefined);
  assert.equal(fake.requests[1].headers["if-none-match"], '"v1"');
  assert.equal(again.status, 304);
  assert.equal(again.notModified, true);
  assert.deepEqual(again.body.keywords, [keyword(1)]);
  assert.equal(again.etag, '"v1"');
});

test("other arguments are another answer: no If-None-Match", async () => {
  const fake = fakeFetch(json(TOP([]), { headers: { ETag: '"v1"' } }));
  const api = client(fake.fetch);
  await api.topKeywords({ window: "7d" });
  await api.topKeywords({ window: "24h" });
  assert.equal(fake.requests[1].headers["if-none-match"], undefined);
});

test("an ETag given by the caller asks for 304; the body is then unknown unless remembered", async () => {
  const fake = fakeFetch(notModified('"zzz"'));
  const reply = await client(fake.fetch).fetch("geo_heat", { window: "24h" }, { etag: '"zzz"' });
  assert.equal(fake.requests[0].headers["if-none-match"], '"zzz"');
  assert.equal(reply.notModified, true);
  assert.equal(reply.body, undefined);
});

test("the memory is bounded: the oldest answer is forgotten", async () => {
  const fake = fakeFetch((request) => json(TOP([]), { headers: { ETag: `"${new URL(request.url).search}"` } }));
  const api = client(fake.fetch, { remember: 2 });
  for (const limit of [1, 2, 3]) await api.topKeywords({ limit });
  await api.topKeywords({ limit: 1 });
  await api.topKeywords({ limit: 3 });
  assert.equal(fake.requests[3].headers["if-none-match"], undefined);
  assert.equal(fake.requests[4].headers["if-none-match"], '"?limit=3"');
});

test("query with format csv gives the CSV text (fetch's text() drops the byte order mark)", async () => {
  const csv = "country_id,country_name,suppressions\r\nUS,United States,10\r\n";
  const fake = fakeFetch(new Response("\ufeff" + csv, { headers: { "Content-Type": "text/csv; charset=utf-8; header=present" } }));
  const text = await client(fake.fetch).query({ window: "30d", group_by: ["country"], format: "csv" });
  assert.equal(text, csv);
});

test("outside a page the API's address is needed", () => {
  assert.throws(() => new SignalsClient({ token: "x" }), /baseUrl is needed/);
});

test("the raw openapi-fetch client has the same bearer", async () => {
  const fake = fakeFetch(json(TOP([])));
  const { data, response } = await client(fake.fetch).raw.GET("/api/v1/signals/top-keywords", { params: { query: { limit: 5 } } });
  assert.equal(response.status, 200);
  assert.deepEqual(data.keywords, []);
  assert.equal(fake.requests[0].headers.authorization, "Bearer sig_live_key");
});
