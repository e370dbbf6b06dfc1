// A fake fetch for the client's tests: answers each request with the next of `answers` (a Response,
// a function of the request giving one, or an Error to throw), and keeps what was asked.
export const API = "https://signals.test";

export function fakeFetch(...answers) {
  const requests = [];
  const fetch = async (request) => {
    requests.push({ method: request.method, url: request.url, headers: Object.fromEntries(request.headers),
                    body: request.body ? await request.text() : null });
    const next = answers.length > 1 ? answers.shift() : answers[0];
    if (next === undefined) throw new Error(`no answer for ${request.method} ${request.url}`);
    const answer = typeof next === "function" ? await next(request) : next;
    if (answer instanceof Error) throw answer;
    return answer.clone();
  };
  return { fetch, requests };
}

export function json(body, { status = 200, headers = {} } = {}) {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
}

export function problem(status, slug, { headers = {}, ...members } = {}) {
  const body = { type: `urn:signals:problem:${slug}`, title: slug.replace(/-/g, " "), status,
                 detail: `the ${slug} detail`, request_id: "req-1", disclaimer: "estimates", ...members };
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/problem+json", ...headers } });
}

export function notModified(etag) {
  return new Response(null, { status: 304, headers: { ETag: etag } });
}

/** A sleep that records the seconds asked and returns at once. */
export function recordedSleep() {
  const waits = [];
  const sleep = async (seconds) => { waits.push(seconds); };
  return { sleep, waits };
}

export const TOP = (keywords, extra = {}) => ({ window: "7d", keywords, disclaimer: "estimates", ...extra });
export const keyword = (rank) => ({ keyword_raw: `k${rank}`, suppressions: 1000 - rank, users_est: 100 - rank, rank });
