/**
 * `SignalsClient`: the typed client of the Signals API, for browsers and Node 20+.
 *
 *     const api = new SignalsClient({ baseUrl: "https://signals.example.com", token });
 *     const top = await api.topKeywords({ window: "7d", limit: 10 });   // the JSON body, typed
 *     const reply = await api.fetch("top_keywords", { window: "7d" });  // body + what its headers say
 *     reply.totalRows; reply.nextPage; reply.privacyBudget;             // Signals-Total-Rows, Link, ...
 *     const next = await api.next(reply);                               // the next page, or null
 *
 * One method per operation of the API's OpenAPI document, named by its operationId in camelCase
 * (`top_keywords` -> `topKeywords`), made from the generated operation table (src/operations.ts),
 * and typed by the generated schema (src/schema.d.ts, openapi-typescript): an endpoint the API adds
 * is a method here once `npm run generate` has run, without code. A method takes one object: the
 * operation's path parameters, then its query parameters (GET) or its JSON body fields (POST, PATCH).
 *
 * It behaves as the Python client (connectors/client.py) does:
 * - `Authorization: Bearer <token>`: a browser token minted by your server (POST /api/v1/tokens)
 *   or, on a server, the subscription key; a function is called before each request;
 * - 429: waits `Retry-After` and tries again while the waits stay within `maxRateLimitWait` seconds
 *   in all (a longer one is given up at once); a refusal by the privacy budget (429 of type
 *   urn:signals:problem:privacy-budget) is never retried: it renews with the month;
 * - 503 and connection failures: retried up to `maxRetries` times, after the 503's `Retry-After`
 *   or an exponential backoff with jitter; a connection failure only for operations that read
 *   (every data operation, `POST /query` included; never creating or changing a webhook, which a
 *   lost answer must not do twice);
 * - conditional requests: each answer's ETag is remembered with its body and sent back as
 *   `If-None-Match`; a 304 gives the remembered body (`Reply.notModified`);
 * - every failure is one `SignalsError` carrying the API's problem+json (type, title, status,
 *   detail, errors, request_id), or a problem of `PROBLEM` for a failure found here.
 *
 * Underneath is openapi-fetch (`raw`: its client over the same schema, with the same bearer and
 * retries, for whoever prefers `raw.GET("/api/v1/signals/top-keywords", ...)`).
 */
import createClient from "openapi-fetch";
import type { Client } from "openapi-fetch";

import { nextLink, privacyBudget, rateLimit } from "./headers";
import type { PrivacyBudget, RateLimit } from "./headers";
import { OPERATIONS } from "./operations";
import { PROBLEM, SignalsError, retryAfterSeconds } from "./problems";
import type { operations, paths } from "./schema";

export const VERSION = "0.1.0";
const MOST_ATTEMPTS = 100; // of one request, whatever the waits (a Retry-After of 0 must not spin forever)
const READS = new Set(["GET", "HEAD", "OPTIONS"]);
// The data operations only read: a POST /query that may have arrived is safe to send again.
const DATA_PATHS = new Set<string>(Object.values(OPERATIONS).filter((op) => op.tag === "signals").map((op) => op.path));

// -- types, all derived from the generated schema ---------------------------------------------

export type OperationId = keyof typeof OPERATIONS & keyof operations;
type Op<K extends OperationId> = operations[K];
type Present<T> = [T] extends [never] ? {} : [T] extends [undefined] ? {} : T;
type PathArgs<K extends OperationId> = Present<NonNullable<Op<K>["parameters"]["path"]>>;
type QueryArgs<K extends OperationId> = Present<NonNullable<Op<K>["parameters"]["query"]>>;
type BodyArgs<K extends OperationId> = Op<K> extends { requestBody: { content: { "application/json": infer B } } }
  ? B
  : Op<K> extends { requestBody?: { content: { "application/json": infer B } } } ? Present<NonNullable<B>> : {};

/** What an operation's method takes: its path parameters, then its query parameters or body fields. */
export type Args<K extends OperationId> = PathArgs<K> & QueryArgs<K> & BodyArgs<K>;

type Responses<K extends OperationId> = Op<K>["responses"];
type Success<K extends OperationId> =
  Responses<K> extends { 200: infer R } ? R
  : Responses<K> extends { 201: infer R } ? R
  : Responses<K> extends { 202: infer R } ? R
  : undefined;
type Content<R> = R extends { content: infer C }
  ? (C extends { "application/json": infer J } ? J : never) | (C extends { "text/csv": unknown } ? string : never)
  : undefined;

/** An operation's answer: its JSON body (CSV text for `query` with format "csv"; undefined for 204). */
export type Answer<K extends OperationId> = Content<Success<K>>;
/** The answer to the arguments given: CSV text when they ask `format: "csv"`, else the JSON body. */
export type AnswerTo<K extends OperationId, A> = A extends { format: "csv" } ? Extract<Answer<K>, string>
  : Exclude<Answer<K>, string>;
/** One record of an operation's answer (`Item<"top_keywords">`: a ranked keyword). */
export type Item<K extends OperationId> = (typeof OPERATIONS)[K]["records"] extends infer F extends string
  ? Exclude<Answer<K>, string> extends { [P in F]?: (infer R)[] } ? R : never
  : never;

type CamelCase<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<CamelCase<T>>}` : S;
type Exact<A, Allowed> = A & Record<Exclude<keyof A, keyof Allowed>, never>; // a misspelt name is an error
type Method<K extends OperationId> = {} extends Args<K>
  ? <A extends Args<K> = Args<K>>(args?: Exact<A, Args<K>>, options?: CallOptions) => Promise<AnswerTo<K, A>>
  : <A extends Args<K>>(args: Exact<A, Args<K>>, options?: CallOptions) => Promise<AnswerTo<K, A>>;

/** One method per operation, by its operationId in camelCase (`topKeywords`, `createWebhook`). */
export type Methods = { [K in OperationId as CamelCase<K>]: Method<K> };

export interface ClientOptions {
  /** The API's address (`https://signals.example.com`); on a page, "" (the default) is the page's own origin. */
  baseUrl?: string;
  /** The bearer: on a page a browser token your server minted (POST /api/v1/tokens), on a server a
   * subscription key; or a function giving it, called before each request (to renew a token in time). */
  token?: string | (() => string | Promise<string>);
  /** Retries of a 503 or a connection failure (3). */
  maxRetries?: number;
  /** Seconds of 429 `Retry-After` waits a request may spend in all before giving up (60). */
  maxRateLimitWait?: number;
  /** Seconds of the first backoff, doubling to at most 8, plus up to as much jitter (0.5). */
  backoff?: number;
  /** Seconds an attempt waits for an answer's headers before it counts as a connection failure (30). */
  timeout?: number;
  /** Answers remembered for conditional requests (256). */
  remember?: number;
  /** More headers for every request. */
  headers?: Record<string, string>;
  /** The fetch to use (the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /** How to wait, in seconds (tests pass one that does not). */
  sleep?: (seconds: number) => Promise<void>;
  /** Jitter's source of numbers in [0, 1) (Math.random). */
  random?: () => number;
}

export interface FetchOptions {
  /** Ask for 304 while the answer still has this ETag (the body is then undefined unless remembered). */
  etag?: string;
  /** Aborts the request and its retries. */
  signal?: AbortSignal;
}

export interface CallOptions extends FetchOptions {
  /** Every page of the answer, its records joined (`fetchAll`). */
  allPages?: boolean;
  /** With `allPages`: more pages than this is a SignalsError of type too-many-pages (1000). */
  maxPages?: number;
}

interface Sent {
  method: string;
  body: Record<string, unknown> | undefined;
}

/** One answer: its body, status and headers, and what the headers say. */
export class Reply<K extends OperationId = OperationId> {
  constructor(
    readonly operation: K,
    /** The JSON body (CSV text for format "csv"); on a 304, the remembered body or undefined. */
    readonly body: Answer<K>,
    readonly status: number,
    readonly headers: Headers,
    /** The server said 304: the body is the one remembered with this ETag. */
    readonly notModified: boolean,
    /** The pages fetched for it (`fetchAll`). */
    readonly pages: number,
    /** @internal how it was asked, for its next page */
    readonly sent: Sent,
  ) {}

  get etag(): string | null {
    return this.headers.get("etag");
  }

  /** How many rows the full answer holds (Signals-Total-Rows); null when not said. */
  get totalRows(): number | null {
    const value = this.headers.get("signals-total-rows") ?? "";
    return /^\d+$/.test(value) ? Number(value) : null;
  }

  /** The URL (path and query) of the next page (Link rel="next"); null on the last page. */
  get nextPage(): string | null {
    return nextLink(this.headers.get("link"));
  }

  /** The hour the answer is for (X-Signals-As-Of, ISO 8601 UTC). */
  get asOf(): string | null {
    return this.headers.get("x-signals-as-of");
  }

  /** The subscription's privacy budget after this answer (Signals-Privacy-Budget). */
  get privacyBudget(): PrivacyBudget | null {
    return privacyBudget(this.headers.get("signals-privacy-budget"));
  }

  /** The rate limit after this answer (RateLimit). */
  get rateLimit(): RateLimit | null {
    return rateLimit(this.headers.get("ratelimit"));
  }

  get requestId(): string | null {
    return this.headers.get("x-request-id");
  }

  /** The records this answer holds (its records member; none for CSV text or an answer without records). */
  get records(): Item<K>[] {
    if (typeof this.body === "string") return [];
    const field = OPERATIONS[this.operation].records;
    const body = this.body as Record<string, unknown> | undefined;
    return field && Array.isArray(body?.[field]) ? (body[field] as Item<K>[]) : [];
  }
}

interface Remembered {
  etag: string;
  body: unknown;
}

// openapi-fetch's client without its per-path types: the operation table says which path is asked.
type Untyped = {
  request(method: string, url: string, init: Record<string, unknown>): Promise<{ data?: unknown; error?: unknown; response: Response }>;
};

export interface SignalsClient extends Methods {}

export class SignalsClient {
  readonly baseUrl: string;
  /** The openapi-fetch client underneath: the same bearer, headers and retries, no ETag memory. */
  readonly raw: Client<paths>;
  readonly maxRetries: number;
  readonly maxRateLimitWait: number;
  readonly #backoff: number;
  readonly #timeout: number;
  readonly #remember: number;
  readonly #fetch: (request: Request) => Promise<Response>;
  readonly #sleep: (seconds: number) => Promise<void>;
  readonly #random: () => number;
  readonly #memory = new Map<string, Remembered>();

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? "").replace(/\/+$/, "");
    if (!this.baseUrl && typeof document === "undefined") {
      throw new TypeError("SignalsClient: baseUrl is needed outside a page (the API's address, e.g. http://127.0.0.1:8000)");
    }
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRateLimitWait = options.maxRateLimitWait ?? 60;
    this.#backoff = options.backoff ?? 0.5;
    this.#timeout = options.timeout ?? 30;
    this.#remember = options.remember ?? 256;
    this.#fetch = options.fetch ?? ((request) => globalThis.fetch(request)); // unbound, a page's fetch throws
    this.#sleep = options.sleep ?? ((seconds) => new Promise((done) => setTimeout(done, seconds * 1000)));
    this.#random = options.random ?? Math.random;
    const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
    const node = (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node;
    if (node && typeof document === "undefined") { // a page cannot name itself (and CORS would not allow it)
      headers["User-Agent"] ??= `signals-typescript-client/${VERSION} node/${node}`;
    }
    this.raw = createClient<paths>({ baseUrl: this.baseUrl, headers, fetch: (request: Request) => this.#send(request) });
    const token = options.token;
    this.raw.use({
      async onRequest({ request }) {
        const bearer = typeof token === "function" ? await token() : token;
        if (bearer) request.headers.set("Authorization", `Bearer ${bearer}`);
        return request;
      },
    });
  }

  /** An operation's answer body (every page of it with `allPages`); the methods call this. */
  async call<K extends OperationId>(operation: K, args?: Args<K>, options: CallOptions = {}): Promise<Answer<K>> {
    const reply = options.allPages ? await this.fetchAll(operation, args, options) : await this.fetch(operation, args, options);
    return reply.body;
  }

  /** An operation's answer with its headers: one request (and its retries). */
  async fetch<K extends OperationId>(operation: K, args?: Args<K>, options: FetchOptions = {}): Promise<Reply<K>> {
    const row = OPERATIONS[operation];
    if (!row) {
      throw new SignalsError({ type: PROBLEM.unknownOperation, title: "Unknown operation", status: null,
        detail: `There is no operation ${JSON.stringify(operation)}. Operations: ${Object.keys(OPERATIONS).join(", ")}.` });
    }
    const given = Object.fromEntries(Object.entries((args ?? {}) as Record<string, unknown>)
      .filter(([, value]) => value !== undefined && value !== null));
    const path = Object.fromEntries(row.pathParams.map((name) => [name, given[name]]));
    const missing = row.pathParams.filter((name) => given[name] === undefined || given[name] === "");
    if (missing.length) {
      throw new SignalsError({ type: PROBLEM.invalidRequest, title: "Invalid or missing parameter",
        status: 400, detail: `${missing.join(", ")} is required.`, errors: missing.map((name) => ({ name, reason: "is required" })) });
    }
    const rest = Object.fromEntries(Object.entries(given).filter(([name]) => !row.pathParams.includes(name as never)));
    return this.#exchange(operation, row.method, row.path, row.pathParams.length ? path : undefined,
      row.body ? undefined : rest, row.body ? rest : undefined, options);
  }

  /** The next page of an answer (its Link rel="next"; the same body posted again for `query`), or null. */
  async next<K extends OperationId>(reply: Reply<K>, options: FetchOptions = {}): Promise<Reply<K> | null> {
    const link = reply.nextPage;
    if (link === null) return null;
    const url = new URL(link, this.baseUrl || globalThis.location?.href);
    const path = /^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith("//")
      ? url.pathname + url.search // absolute: asked of baseUrl all the same, as the bearer is for it
      : link;
    return this.#exchange(reply.operation, reply.sent.method, path, undefined, undefined, reply.sent.body, options);
  }

  /** The whole answer, every page of it: the first page, then each next one, the records (or CSV
   * lines) joined in order. Its headers are the first page's; `pages` says how many were fetched.
   * More than `maxPages` pages is a SignalsError of type too-many-pages (nothing returned half). */
  async fetchAll<K extends OperationId>(operation: K, args?: Args<K>, options: CallOptions = {}): Promise<Reply<K>> {
    const maxPages = options.maxPages ?? 1000;
    const first = await this.fetch(operation, args, options);
    if (first.body === undefined) return first;
    const field = OPERATIONS[operation].records;
    let body: unknown = typeof first.body === "string" ? first.body : structuredClone(first.body);
    let pages = 1;
    for (let page = await this.next(first, options); page !== null; page = await this.next(page, options)) {
      if (pages >= maxPages) {
        throw new SignalsError({ type: PROBLEM.tooManyPages, title: "Too many pages", status: null,
          detail: `${operation}: the answer has more than ${maxPages} pages (${first.totalRows} rows); ask with a larger limit or a narrower request.` });
      }
      if (typeof body === "string") {
        const text = String(page.body ?? "").replace(/^\ufeff/, "");
        body += text.includes("\n") ? text.slice(text.indexOf("\n") + 1) : "";
      } else if (field) {
        const records = (body as Record<string, unknown[]>)[field];
        records.push(...((page.body as Record<string, unknown[]> | undefined)?.[field] ?? []));
      }
      pages += 1;
    }
    const headers = new Headers(first.headers);
    headers.delete("link");
    if (pages > 1) headers.delete("etag"); // the ETag was the first page's
    return new Reply(operation, body as Answer<K>, first.status, headers, first.notModified, pages, first.sent);
  }

  async #exchange<K extends OperationId>(operation: K, method: string, url: string, path: Record<string, unknown> | undefined,
    query: Record<string, unknown> | undefined, body: Record<string, unknown> | undefined,
    options: FetchOptions): Promise<Reply<K>> {
    const key = JSON.stringify([method, url, path ?? null, query ?? null, body ?? null]);
    const remembered = this.#memory.get(key);
    const etag = options.etag ?? remembered?.etag;
    const csv = (query?.format ?? body?.format) === "csv";
    let result: Awaited<ReturnType<Untyped["request"]>>;
    try {
      result = await (this.raw as unknown as Untyped).request(method.toLowerCase(), url, {
        params: { path, query }, body, signal: options.signal,
        headers: etag ? { "If-None-Match": etag } : undefined,
        parseAs: csv ? "text" : "json",
      });
    } catch (error) {
      if (error instanceof SyntaxError) { // a success whose body is not JSON: not the API's answer
        throw new SignalsError({ type: PROBLEM.unexpectedAnswer, title: "Unexpected answer", status: null,
          detail: `${method} ${url}: the answer is not JSON (${error.message})` }, null, { cause: error });
      }
      throw error;
    }
    const { data, error, response } = result;
    const sent = { method, body };
    if (response.status === 304) {
      const known = remembered !== undefined && remembered.etag === etag ? structuredClone(remembered.body) : undefined;
      const headers = new Headers(response.headers);
      if (!headers.has("etag") && etag) headers.set("etag", etag);
      return new Reply(operation, known as Answer<K>, 304, headers, true, 1, sent);
    }
    if (!response.ok) throw SignalsError.fromResponse(response, error);
    const tag = response.headers.get("etag");
    if (tag && (READS.has(method) || DATA_PATHS.has(OPERATIONS[operation].path))) {
      this.#memory.delete(key);
      this.#memory.set(key, { etag: tag, body: structuredClone(data) });
      for (const oldest of this.#memory.keys()) {
        if (this.#memory.size <= this.#remember) break;
        this.#memory.delete(oldest);
      }
    }
    return new Reply(operation, data as Answer<K>, response.status, response.headers, false, 1, sent);
  }

  /** One request as sent by openapi-fetch, retried as the module's comment says; returns the last answer. */
  async #send(request: Request): Promise<Response> {
    const reads = READS.has(request.method) || DATA_PATHS.has(new URL(request.url).pathname);
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await this.#attempt(request);
      } catch (error) {
        if (request.signal.aborted) throw error; // the caller's
        if (!reads || attempt > this.maxRetries) {
          throw new SignalsError({ type: PROBLEM.unreachable, title: "Cannot reach the Signals API", status: null,
            detail: `${request.method} ${request.url}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}` },
          null, { cause: error });
        }
        const wait = this.#backoffSeconds(attempt);
        waited += wait;
        await this.#sleep(wait);
        continue;
      }
      if (response.status !== 429 && response.status !== 503) return response;
      if (response.status === 429 && await refusedByBudget(response)) return response;
      const retryAfter = retryAfterSeconds(response.headers);
      let wait: number;
      if (retryAfter !== null) {
        // Retry-After is a promise: wait for it while the waits stay within maxRateLimitWait.
        if (waited + retryAfter > this.maxRateLimitWait) return response;
        if (attempt >= (response.status === 429 ? MOST_ATTEMPTS : this.maxRetries + 1)) return response;
        wait = retryAfter;
      } else {
        if (attempt > this.maxRetries) return response;
        wait = this.#backoffSeconds(attempt);
      }
      void response.body?.cancel().catch(() => {}); // frees the connection (not awaited: a teed body waits for its twin)
      waited += wait;
      await this.#sleep(wait);
    }
  }

  /** One attempt, given up after `timeout` seconds without an answer (or when the caller aborts). */
  async #attempt(request: Request): Promise<Response> {
    const controller = new AbortController();
    const abort = () => controller.abort(request.signal.reason);
    if (request.signal.aborted) abort();
    request.signal.addEventListener("abort", abort, { once: true });
    const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${this.#timeout} s`, "TimeoutError")),
      this.#timeout * 1000);
    try {
      return await this.#fetch(new Request(request.clone(), { signal: controller.signal }));
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener("abort", abort);
    }
  }

  #backoffSeconds(attempt: number): number {
    return Math.min(8, this.#backoff * 2 ** (attempt - 1)) + this.#random() * this.#backoff;
  }
}

/** A 429 of the privacy budget: waiting minutes does not help (it renews with the month). */
async function refusedByBudget(response: Response): Promise<boolean> {
  if (!(response.headers.get("content-type") ?? "").includes("problem+json")) return false;
  try {
    const problem = await response.clone().json();
    return problem?.type === PROBLEM.privacyBudget;
  } catch {
    return false;
  }
}

const camelCase = (name: string) => name.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());

/** The camelCase method name of each operationId (`top_keywords` -> `topKeywords`). */
export const METHOD_NAMES = Object.fromEntries(Object.keys(OPERATIONS).map((id) => [id, camelCase(id)])) as {
  [K in OperationId]: CamelCase<K>;
};

for (const [operation, name] of Object.entries(METHOD_NAMES)) {
  Object.defineProperty(SignalsClient.prototype, name, {
    configurable: true,
    writable: true,
    value: function (this: SignalsClient, args?: Args<OperationId>, options?: CallOptions) {
      return this.call(operation as OperationId, args, options);
    },
  });
}
