// Pages: Link rel="next" and Signals-Total-Rows, the next page of a GET and of POST /query, every page joined.
import assert from "node:assert/strict";
import { test } from "node:test";

import { PROBLEM, SignalsClient } from "../dist/signals-client.js";
import { API, TOP, fakeFetch, json, keyword, notModified } from "./fake.mjs";

const client = (fetch) => new SignalsClient({ baseUrl: API, token: "sig_live_key", fetch });
const AS_OF = "2026-03-10T12:00:00Z";

/** /top-keywords of 5 rows, in pages of `limit`, as the API pages them. */
function rankedApi() {
  return (request) => {
    const url = new URL(request.url);
    const limit = Number(url.searchParams.get("limit") ?? 50), offset = Number(url.searchParams.get("offset") ?? 0);
    const rows = [1, 2, 3, 4, 5].slice(offset, offset + limit).map(keyword);
    const headers = { "Signals-Total-Rows": "5", ETag: `"p${offset}"` };
    if (offset + limit < 5) {
      headers.Link = `</api/v1/signals/top-keywords?window=7d&limit=${limit}&offset=${offset + limit}&as_of=${AS_OF}>; rel="next"`;
    }
    return json(TOP(rows), { headers });
  };
}

test("next() follows the Link of a GET; null after the last page", async () => {
  const fake = fakeFetch(rankedApi());
  const api = client(fake.fetch);
  const first = await api.fetch("top_keywords", { window: "7d", limit: 2 });
  assert.equal(first.totalRows, 5);
  const second = await api.next(first);
  assert.deepEqual(second.records.map((r) => r.rank), [3, 4]);
  assert.equal(fake.requests[1].url, `${API}/api/v1/signals/top-keywords?window=7d&limit=2&offset=2&as_of=${AS_OF}`);
  assert.equal(fake.requests[1].headers.authorization, "Bearer sig_live_key");
  const third = await api.next(second);
  assert.deepEqual(third.records.map((r) => r.rank), [5]);
  assert.equal(third.nextPage, null);
  assert.equal(await api.next(third), null);
});

test("fetchAll joins every page's records; allPages on a method does the same", async () => {
  const fake = fakeFetch(rankedApi());
  const api = client(fake.fetch);
  const all = await api.fetchAll("top_keywords", { window: "7d", limit: 2 });
  assert.deepEqual(all.body.keywords.map((r) => r.rank), [1, 2, 3, 4, 5]);
  assert.equal(all.pages, 3);
  assert.equal(all.totalRows, 5);
  assert.equal(all.nextPage, null);
  assert.equal(all.etag, null); // the first page's ETag is not the whole answer's
  const body = await api.topKeywords({ window: "7d", limit: 2 }, { allPages: true });
  assert.equal(body.keywords.length, 5);
});

test("pages are revalidated with their own ETags", async () => {
  const fake = fakeFetch(rankedApi());
  const api = client(fake.fetch);
  const first = await api.fetch("top_keywords", { window: "7d", limit: 3 });
  await api.next(first);
  fake.requests.length = 0;
  await api.next(first);
  assert.equal(fake.requests[0].headers["if-none-match"], '"p3"');
});

test("the next page of POST /query posts the same body to the cursor's URL", async () => {
  const body = { window: "7d", group_by: ["keyword"], limit: 1 };
  const page = (keyword, link) => json({ window: "7d", bucket: null, group_by: ["keyword"], disclaimer: "e",
                                         results: [{ keyword, suppressions: 1, unique_users: 1, events: 1 }] },
                                       { headers: { "Signals-Total-Rows": "2", ...(link ? { Link: link } : {}) } });
  const fake = fakeFetch(page("a", '</api/v1/signals/query?cursor=abc.def>; rel="next"'), page("b"));
  const all = await client(fake.fetch).fetchAll("query", body);
  assert.deepEqual(all.body.results.map((r) => r.keyword), ["a", "b"]);
  assert.equal(fake.requests[1].method, "POST");
  assert.equal(fake.requests[1].url, `${API}/api/v1/signals/query?cursor=abc.def`);
  assert.deepEqual(JSON.parse(fake.requests[1].body), body);
});

test("CSV pages are joined without their headings", async () => {
  const csv = (rows, link) => new Response(["keyword,suppressions", ...rows].join("\r\n") + "\r\n",
    { headers: { "Content-Type": "text/csv", ...(link ? { Link: link } : {}) } });
  const fake = fakeFetch(csv(["a,2"], '</api/v1/signals/query?cursor=c1>; rel="next"'), csv(["b,1"]));
  const text = await client(fake.fetch).query({ window: "7d", group_by: ["keyword"], format: "csv", limit: 1 },
                                              { allPages: true });
  assert.equal(text, "keyword,suppressions\r\na,2\r\nb,1\r\n");
});

test("more pages than maxPages is a SignalsError, nothing returned half", async () => {
  const fake = fakeFetch(rankedApi());
  await assert.rejects(client(fake.fetch).fetchAll("top_keywords", { limit: 1 }, { maxPages: 3 }),
    (error) => error.type === PROBLEM.tooManyPages && /more than 3 pages \(5 rows\)/.test(error.detail));
});

test("an absolute next link is asked of the client's own API", async () => {
  const fake = fakeFetch(
    json(TOP([keyword(1)]), { headers: { Link: `<https://elsewhere.test/api/v1/signals/top-keywords?offset=1>; rel="next"` } }),
    json(TOP([keyword(2)])));
  const api = client(fake.fetch);
  await api.next(await api.fetch("top_keywords", { limit: 1 }));
  assert.equal(fake.requests[1].url, `${API}/api/v1/signals/top-keywords?offset=1`);
});

test("a 304 first page without a remembered body stops there", async () => {
  const fake = fakeFetch(notModified('"x"'));
  const reply = await client(fake.fetch).fetchAll("top_keywords", {}, { etag: '"x"' });
  assert.equal(reply.body, undefined);
  assert.equal(reply.notModified, true);
});
