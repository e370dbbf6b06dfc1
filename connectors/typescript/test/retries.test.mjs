// Retries as the Python client makes them (connectors/client.py): Retry-After on 429 within a budget
// of waits, never a privacy-budget 429, 503 and connection failures with backoff, bounded.
import assert from "node:assert/strict";
import { test } from "node:test";

import { PROBLEM, SignalsClient, SignalsError } from "../dist/signals-client.js";
import { API, TOP, fakeFetch, json, problem, recordedSleep } from "./fake.mjs";

function client(fetch, options = {}) {
  const { sleep, waits } = recordedSleep();
  return { api: new SignalsClient({ baseUrl: API, token: "k", fetch, sleep, random: () => 0, ...options }), waits };
}
const limited = (seconds) => problem(429, "rate-limited", { headers: { "Retry-After": String(seconds) } });
const refusedByBudget = () => problem(429, "privacy-budget", {
  headers: { "Retry-After": "1900000" }, privacy_budget: { limit: 100, spent: 99.5, remaining: 0.5, charge: 1.3 } });

test("429: waits Retry-After and asks again", async () => {
  const fake = fakeFetch(limited(2), limited(3), json(TOP([])));
  const { api, waits } = client(fake.fetch);
  assert.deepEqual((await api.topKeywords()).keywords, []);
  assert.deepEqual(waits, [2, 3]);
  assert.equal(fake.requests.length, 3);
});

test("429: waits add up to at most maxRateLimitWait; past it the 429 is raised without waiting", async () => {
  const fake = fakeFetch(limited(40), limited(30), json(TOP([])));
  const { api, waits } = client(fake.fetch, { maxRateLimitWait: 60 });
  const error = await api.topKeywords().catch((e) => e);
  assert.ok(error instanceof SignalsError);
  assert.equal(error.status, 429);
  assert.equal(error.retryAfter, 30);
  assert.deepEqual(waits, [40]);
  assert.equal(fake.requests.length, 2);
});

test("429: a Retry-After longer than the budget is raised at once", async () => {
  const fake = fakeFetch(limited(3600));
  const { api, waits } = client(fake.fetch);
  await assert.rejects(api.geoHeat(), (error) => error.status === 429 && error.retryAfter === 3600);
  assert.deepEqual(waits, []);
});

test("429 of the privacy budget is never retried: it renews with the month", async () => {
  const fake = fakeFetch(refusedByBudget(), json(TOP([])));
  const { api, waits } = client(fake.fetch, { maxRateLimitWait: Infinity });
  const error = await api.topKeywords().catch((e) => e);
  assert.equal(error.type, PROBLEM.privacyBudget);
  assert.equal(error.status, 429);
  assert.equal(error.problem.privacy_budget.remaining, 0.5);
  assert.deepEqual(waits, []);
  assert.equal(fake.requests.length, 1);
});

test("429: a Retry-After of 0 does not spin forever", async () => {
  const fake = fakeFetch(limited(0));
  const { api } = client(fake.fetch);
  await assert.rejects(api.topKeywords(), (error) => error.status === 429);
  assert.equal(fake.requests.length, 100);
});

test("429 without Retry-After: backoff, up to maxRetries", async () => {
  const fake = fakeFetch(problem(429, "rate-limited"));
  const { api, waits } = client(fake.fetch, { maxRetries: 2 });
  await assert.rejects(api.topKeywords(), (error) => error.status === 429);
  assert.deepEqual(waits, [0.5, 1]);
});

test("503: after Retry-After, at most maxRetries times", async () => {
  const unavailable = problem(503, "answer-not-ready", { headers: { "Retry-After": "4" } });
  const fake = fakeFetch(unavailable);
  const { api, waits } = client(fake.fetch, { maxRetries: 3 });
  const error = await api.trending().catch((e) => e);
  assert.equal(error.type, "urn:signals:problem:answer-not-ready");
  assert.equal(error.retryAfter, 4);
  assert.deepEqual(waits, [4, 4, 4]);
  assert.equal(fake.requests.length, 4);
});

test("503 then an answer: the answer", async () => {
  const fake = fakeFetch(problem(503, "unavailable"), json(TOP([])));
  const { api, waits } = client(fake.fetch);
  await api.topKeywords();
  assert.deepEqual(waits, [0.5]);
});

test("backoff doubles, with jitter, to at most 8 s", async () => {
  const fake = fakeFetch(problem(503, "unavailable"));
  const { api, waits } = client(fake.fetch, { maxRetries: 6, random: () => 0.5 });
  await assert.rejects(api.topKeywords());
  assert.deepEqual(waits, [0.75, 1.25, 2.25, 4.25, 8.25, 8.25]);
});

test("a connection failure of a read is retried; past maxRetries it is unreachable", async () => {
  const fake = fakeFetch(new TypeError("fetch failed"));
  const { api, waits } = client(fake.fetch, { maxRetries: 2 });
  const error = await api.query({ window: "7d" }).catch((e) => e);
  assert.equal(error.type, PROBLEM.unreachable);
  assert.equal(error.status, null);
  assert.equal(error.title, "Cannot reach the Signals API");
  assert.match(error.detail, /POST https:\/\/signals\.test\/api\/v1\/signals\/query: TypeError: fetch failed/);
  assert.equal(fake.requests.length, 3);
  assert.equal(waits.length, 2);
});

test("a connection failure of a request that changes something is not retried", async () => {
  const fake = fakeFetch(new TypeError("fetch failed"), json({ id: "wh_1" }));
  const { api } = client(fake.fetch);
  await assert.rejects(api.createWebhook({ url: "https://example.com/h", window: "24h", dimension: "keyword",
                                           threshold_pct: 50, cooldown_minutes: 60 }),
                       (error) => error.type === PROBLEM.unreachable);
  assert.equal(fake.requests.length, 1);
});

test("a 503 of a request that changes something is retried (the API refused before acting)", async () => {
  const fake = fakeFetch(problem(503, "unavailable"), json({ id: "wh_1" }, { status: 201 }));
  const { api } = client(fake.fetch);
  const made = await api.createWebhook({ url: "https://example.com/h", window: "24h", dimension: "keyword",
                                         threshold_pct: 50, cooldown_minutes: 60 });
  assert.equal(made.id, "wh_1");
  assert.equal(fake.requests.length, 2);
  assert.equal(fake.requests[0].body, fake.requests[1].body);
});

test("an attempt without an answer within timeout counts as a connection failure", async () => {
  const hang = (request) => new Promise((_, fail) => request.signal.addEventListener("abort", () => fail(request.signal.reason)));
  const fake = fakeFetch(hang, json(TOP([])));
  const { api } = client(fake.fetch, { timeout: 0.05 });
  assert.deepEqual((await api.topKeywords()).keywords, []);
  assert.equal(fake.requests.length, 2);
});

test("the caller's abort ends the request and its retries", async () => {
  const controller = new AbortController();
  const fake = fakeFetch(async (request) => { controller.abort(); throw request.signal.reason ?? new Error("aborted"); });
  const { api } = client(fake.fetch);
  await assert.rejects(api.topKeywords({}, { signal: controller.signal }), (error) => error.name === "AbortError");
  assert.equal(fake.requests.length, 1);
});
