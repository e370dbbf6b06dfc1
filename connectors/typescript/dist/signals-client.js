// Signals API client 0.1.0: made by `npm run build` from connectors/typescript/src (do not edit).
// Includes openapi-fetch 0.17.0 (MIT licence, https://openapi-ts.dev).

// node_modules/openapi-fetch/dist/index.mjs
var PATH_PARAM_RE = /\{[^{}]+\}/g;
var supportsRequestInitExt = () => {
  return typeof process === "object" && Number.parseInt(process?.versions?.node?.substring(0, 2)) >= 18 && process.versions.undici;
};
function randomID() {
  return Math.random().toString(36).slice(2, 11);
}
function createClient(clientOptions) {
  let {
    baseUrl = "",
    Request: CustomRequest = globalThis.Request,
    fetch: baseFetch = globalThis.fetch,
    querySerializer: globalQuerySerializer,
    bodySerializer: globalBodySerializer,
    pathSerializer: globalPathSerializer,
    headers: baseHeaders,
    requestInitExt = void 0,
    ...baseOptions
  } = { ...clientOptions };
  requestInitExt = supportsRequestInitExt() ? requestInitExt : void 0;
  baseUrl = removeTrailingSlash(baseUrl);
  const globalMiddlewares = [];
  async function coreFetch(schemaPath, fetchOptions) {
    const {
      baseUrl: localBaseUrl,
      fetch = baseFetch,
      Request: Request2 = CustomRequest,
      headers,
      params = {},
      parseAs = "json",
      querySerializer: requestQuerySerializer,
      bodySerializer = globalBodySerializer ?? defaultBodySerializer,
      pathSerializer: requestPathSerializer,
      body,
      middleware: requestMiddlewares = [],
      ...init
    } = fetchOptions || {};
    let finalBaseUrl = baseUrl;
    if (localBaseUrl) {
      finalBaseUrl = removeTrailingSlash(localBaseUrl) ?? baseUrl;
    }
    let querySerializer = typeof globalQuerySerializer === "function" ? globalQuerySerializer : createQuerySerializer(globalQuerySerializer);
    if (requestQuerySerializer) {
      querySerializer = typeof requestQuerySerializer === "function" ? requestQuerySerializer : createQuerySerializer({
        ...typeof globalQuerySerializer === "object" ? globalQuerySerializer : {},
        ...requestQuerySerializer
      });
    }
    const pathSerializer = requestPathSerializer || globalPathSerializer || defaultPathSerializer;
    const serializedBody = body === void 0 ? void 0 : bodySerializer(
      body,
      // Note: we declare mergeHeaders() both here and below because it’s a bit of a chicken-or-egg situation:
      // bodySerializer() needs all headers so we aren’t dropping ones set by the user, however,
      // the result of this ALSO sets the lowest-priority content-type header. So we re-merge below,
      // setting the content-type at the very beginning to be overwritten.
      // Lastly, based on the way headers work, it’s not a simple “present-or-not” check becauase null intentionally un-sets headers.
      mergeHeaders(baseHeaders, headers, params.header)
    );
    const finalHeaders = mergeHeaders(
      // with no body, we should not to set Content-Type
      serializedBody === void 0 || // if serialized body is FormData; browser will correctly set Content-Type & boundary expression
      serializedBody instanceof FormData ? {} : {
        "Content-Type": "application/json"
      },
      baseHeaders,
      headers,
      params.header
    );
    const finalMiddlewares = [...globalMiddlewares, ...requestMiddlewares];
    const requestInit = {
      redirect: "follow",
      ...baseOptions,
      ...init,
      body: serializedBody,
      headers: finalHeaders
    };
    let id;
    let options;
    let request = new Request2(
      createFinalURL(schemaPath, { baseUrl: finalBaseUrl, params, querySerializer, pathSerializer }),
      requestInit
    );
    let response;
    for (const key in init) {
      if (!(key in request)) {
        request[key] = init[key];
      }
    }
    if (finalMiddlewares.length) {
      id = randomID();
      options = Object.freeze({
        baseUrl: finalBaseUrl,
        fetch,
        parseAs,
        querySerializer,
        bodySerializer,
        pathSerializer
      });
      for (const m of finalMiddlewares) {
        if (m && typeof m === "object" && typeof m.onRequest === "function") {
          const result = await m.onRequest({
            request,
            schemaPath,
            params,
            options,
            id
          });
          if (result) {
            if (result instanceof Request2) {
              request = result;
            } else if (result instanceof Response) {
              response = result;
              break;
            } else {
              throw new Error("onRequest: must return new Request() or Response() when modifying the request");
            }
          }
        }
      }
    }
    if (!response) {
      try {
        response = await fetch(request, requestInitExt);
      } catch (error2) {
        let errorAfterMiddleware = error2;
        if (finalMiddlewares.length) {
          for (let i = finalMiddlewares.length - 1; i >= 0; i--) {
            const m = finalMiddlewares[i];
            if (m && typeof m === "object" && typeof m.onError === "function") {
              const result = await m.onError({
                request,
                error: errorAfterMiddleware,
                schemaPath,
                params,
                options,
                id
              });
              if (result) {
                if (result instanceof Response) {
                  errorAfterMiddleware = void 0;
                  response = result;
                  break;
                }
                if (result instanceof Error) {
                  errorAfterMiddleware = result;
                  continue;
                }
                throw new Error("onError: must return new Response() or instance of Error");
              }
            }
          }
        }
        if (errorAfterMiddleware) {
          throw errorAfterMiddleware;
        }
      }
      if (finalMiddlewares.length) {
        for (let i = finalMiddlewares.length - 1; i >= 0; i--) {
          const m = finalMiddlewares[i];
          if (m && typeof m === "object" && typeof m.onResponse === "function") {
            const result = await m.onResponse({
              request,
              response,
              schemaPath,
              params,
              options,
              id
            });
            if (result) {
              if (!(result instanceof Response)) {
                throw new Error("onResponse: must return new Response() when modifying the response");
              }
              response = result;
            }
          }
        }
      }
    }
    const contentLength = response.headers.get("Content-Length");
    if (response.status === 204 || request.method === "HEAD" || contentLength === "0" && !response.headers.get("Transfer-Encoding")?.includes("chunked")) {
      return response.ok ? { data: void 0, response } : { error: void 0, response };
    }
    if (response.ok) {
      const getResponseData = async () => {
        if (parseAs === "stream") {
          return response.body;
        }
        if (parseAs === "json" && !contentLength) {
          const raw = await response.text();
          return raw ? JSON.parse(raw) : void 0;
        }
        return await response[parseAs]();
      };
      return { data: await getResponseData(), response };
    }
    let error = await response.text();
    try {
      error = JSON.parse(error);
    } catch {
    }
    return { error, response };
  }
  return {
    request(method, url, init) {
      return coreFetch(url, { ...init, method: method.toUpperCase() });
    },
    /** Call a GET endpoint */
    GET(url, init) {
      return coreFetch(url, { ...init, method: "GET" });
    },
    /** Call a PUT endpoint */
    PUT(url, init) {
      return coreFetch(url, { ...init, method: "PUT" });
    },
    /** Call a POST endpoint */
    POST(url, init) {
      return coreFetch(url, { ...init, method: "POST" });
    },
    /** Call a DELETE endpoint */
    DELETE(url, init) {
      return coreFetch(url, { ...init, method: "DELETE" });
    },
    /** Call a OPTIONS endpoint */
    OPTIONS(url, init) {
      return coreFetch(url, { ...init, method: "OPTIONS" });
    },
    /** Call a HEAD endpoint */
    HEAD(url, init) {
      return coreFetch(url, { ...init, method: "HEAD" });
    },
    /** Call a PATCH endpoint */
    PATCH(url, init) {
      return coreFetch(url, { ...init, method: "PATCH" });
    },
    /** Call a TRACE endpoint */
    TRACE(url, init) {
      return coreFetch(url, { ...init, method: "TRACE" });
    },
    /** Register middleware */
    use(...middleware) {
      for (const m of middleware) {
        if (!m) {
          continue;
        }
        if (typeof m !== "object" || !("onRequest" in m || "onResponse" in m || "onError" in m)) {
          throw new Error("Middleware must be an object with one of `onRequest()`, `onResponse() or `onError()`");
        }
        globalMiddlewares.push(m);
      }
    },
    /** Unregister middleware */
    eject(...middleware) {
      for (const m of middleware) {
        const i = globalMiddlewares.indexOf(m);
        if (i !== -1) {
          globalMiddlewares.splice(i, 1);
        }
      }
    }
  };
}
function serializePrimitiveParam(name, value, options) {
  if (value === void 0 || value === null) {
    return "";
  }
  if (typeof value === "object") {
    throw new Error(
      "Deeply-nested arrays/objects aren’t supported. Provide your own `querySerializer()` to handle these."
    );
  }
  return `${name}=${options?.allowReserved === true ? value : encodeURIComponent(value)}`;
}
function serializeObjectParam(name, value, options) {
  if (!value || typeof value !== "object") {
    return "";
  }
  const values = [];
  const joiner = {
    simple: ",",
    label: ".",
    matrix: ";"
  }[options.style] || "&";
  if (options.style !== "deepObject" && options.explode === false) {
    for (const k in value) {
      values.push(k, options.allowReserved === true ? value[k] : encodeURIComponent(value[k]));
    }
    const final2 = values.join(",");
    switch (options.style) {
      case "form": {
        return `${name}=${final2}`;
      }
      case "label": {
        return `.${final2}`;
      }
      case "matrix": {
        return `;${name}=${final2}`;
      }
      default: {
        return final2;
      }
    }
  }
  for (const k in value) {
    const finalName = options.style === "deepObject" ? `${name}[${k}]` : k;
    values.push(serializePrimitiveParam(finalName, value[k], options));
  }
  const final = values.join(joiner);
  return options.style === "label" || options.style === "matrix" ? `${joiner}${final}` : final;
}
function serializeArrayParam(name, value, options) {
  if (!Array.isArray(value)) {
    return "";
  }
  if (options.explode === false) {
    const joiner2 = { form: ",", spaceDelimited: "%20", pipeDelimited: "|" }[options.style] || ",";
    const final = (options.allowReserved === true ? value : value.map((v) => encodeURIComponent(v))).join(joiner2);
    switch (options.style) {
      case "simple": {
        return final;
      }
      case "label": {
        return `.${final}`;
      }
      case "matrix": {
        return `;${name}=${final}`;
      }
      // case "spaceDelimited":
      // case "pipeDelimited":
      default: {
        return `${name}=${final}`;
      }
    }
  }
  const joiner = { simple: ",", label: ".", matrix: ";" }[options.style] || "&";
  const values = [];
  for (const v of value) {
    if (options.style === "simple" || options.style === "label") {
      values.push(options.allowReserved === true ? v : encodeURIComponent(v));
    } else {
      values.push(serializePrimitiveParam(name, v, options));
    }
  }
  return options.style === "label" || options.style === "matrix" ? `${joiner}${values.join(joiner)}` : values.join(joiner);
}
function createQuerySerializer(options) {
  return function querySerializer(queryParams) {
    const search = [];
    if (queryParams && typeof queryParams === "object") {
      for (const name in queryParams) {
        const value = queryParams[name];
        if (value === void 0 || value === null) {
          continue;
        }
        if (Array.isArray(value)) {
          if (value.length === 0) {
            continue;
          }
          search.push(
            serializeArrayParam(name, value, {
              style: "form",
              explode: true,
              ...options?.array,
              allowReserved: options?.allowReserved || false
            })
          );
          continue;
        }
        if (typeof value === "object") {
          search.push(
            serializeObjectParam(name, value, {
              style: "deepObject",
              explode: true,
              ...options?.object,
              allowReserved: options?.allowReserved || false
            })
          );
          continue;
        }
        search.push(serializePrimitiveParam(name, value, options));
      }
    }
    return search.join("&");
  };
}
function defaultPathSerializer(pathname, pathParams) {
  let nextURL = pathname;
  for (const match of pathname.match(PATH_PARAM_RE) ?? []) {
    let name = match.substring(1, match.length - 1);
    let explode = false;
    let style = "simple";
    if (name.endsWith("*")) {
      explode = true;
      name = name.substring(0, name.length - 1);
    }
    if (name.startsWith(".")) {
      style = "label";
      name = name.substring(1);
    } else if (name.startsWith(";")) {
      style = "matrix";
      name = name.substring(1);
    }
    if (!pathParams || pathParams[name] === void 0 || pathParams[name] === null) {
      continue;
    }
    const value = pathParams[name];
    if (Array.isArray(value)) {
      nextURL = nextURL.replace(match, serializeArrayParam(name, value, { style, explode }));
      continue;
    }
    if (typeof value === "object") {
      nextURL = nextURL.replace(match, serializeObjectParam(name, value, { style, explode }));
      continue;
    }
    if (style === "matrix") {
      nextURL = nextURL.replace(match, `;${serializePrimitiveParam(name, value)}`);
      continue;
    }
    nextURL = nextURL.replace(match, style === "label" ? `.${encodeURIComponent(value)}` : encodeURIComponent(value));
  }
  return nextURL;
}
function defaultBodySerializer(body, headers) {
  if (body instanceof FormData) {
    return body;
  }
  if (headers) {
    const contentType = headers.get instanceof Function ? headers.get("Content-Type") ?? headers.get("content-type") : headers["Content-Type"] ?? headers["content-type"];
    if (contentType === "application/x-www-form-urlencoded") {
      return new URLSearchParams(body).toString();
    }
  }
  return JSON.stringify(body);
}
function createFinalURL(pathname, options) {
  let finalURL = `${options.baseUrl}${pathname}`;
  if (options.params?.path) {
    finalURL = options.pathSerializer(finalURL, options.params.path);
  }
  let search = options.querySerializer(options.params.query ?? {});
  if (search.startsWith("?")) {
    search = search.substring(1);
  }
  if (search) {
    finalURL += `?${search}`;
  }
  return finalURL;
}
function mergeHeaders(...allHeaders) {
  const finalHeaders = new Headers();
  for (const h of allHeaders) {
    if (!h || typeof h !== "object") {
      continue;
    }
    const iterator = h instanceof Headers ? h.entries() : Object.entries(h);
    for (const [k, v] of iterator) {
      if (v === null) {
        finalHeaders.delete(k);
      } else if (Array.isArray(v)) {
        for (const v2 of v) {
          finalHeaders.append(k, v2);
        }
      } else if (v !== void 0) {
        finalHeaders.set(k, v);
      }
    }
  }
  return finalHeaders;
}
function removeTrailingSlash(url) {
  if (url.endsWith("/")) {
    return url.substring(0, url.length - 1);
  }
  return url;
}

// src/headers.ts
var LINK_NEXT = /<([^>]*)>\s*;[^,]*?\brel="?next"?/i;
function nextLink(value) {
  const match = LINK_NEXT.exec(value ?? "");
  return match ? match[1] : null;
}
function privacyBudget(value) {
  if (!value) return null;
  const members = /* @__PURE__ */ new Map();
  for (const part of value.split(",")) {
    const [name, ...text] = part.split("=");
    members.set(name.trim(), text.join("=").trim().replace(/^"|"$/g, ""));
  }
  const number = (name, fallback) => Number(members.get(name) ?? fallback);
  const budget = {
    remaining: number("remaining"),
    limit: number("limit"),
    spent: number("spent"),
    charged: number("charged", "0"),
    renews: members.get("renews") ?? ""
  };
  return [budget.remaining, budget.limit, budget.spent, budget.charged].every(Number.isFinite) ? budget : null;
}
function rateLimit(value) {
  const match = /^\s*"([^"]*)"\s*;(.*)$/.exec(value ?? "");
  if (!match) return null;
  const params = new Map(match[2].split(";").map((p) => p.trim().split("=")));
  const remaining = Number(params.get("r")), reset = Number(params.get("t"));
  return Number.isFinite(remaining) && Number.isFinite(reset) ? { policy: match[1], remaining, reset } : null;
}

// src/operations.ts
var OPERATIONS = {
  top_keywords: { "method": "GET", "path": "/api/v1/signals/top-keywords", "tag": "signals", "pathParams": [], "body": false, "records": "keywords" },
  keyword_timeseries: { "method": "GET", "path": "/api/v1/signals/keyword-timeseries", "tag": "signals", "pathParams": [], "body": false, "records": "timeseries" },
  domain_timeseries: { "method": "GET", "path": "/api/v1/signals/domain-timeseries", "tag": "signals", "pathParams": [], "body": false, "records": "timeseries" },
  geo_heat: { "method": "GET", "path": "/api/v1/signals/geo-heat", "tag": "signals", "pathParams": [], "body": false, "records": "regions" },
  trending: { "method": "GET", "path": "/api/v1/signals/trending", "tag": "signals", "pathParams": [], "body": false, "records": "trending" },
  keyword_activity: { "method": "GET", "path": "/api/v1/signals/keyword-activity", "tag": "signals", "pathParams": [], "body": false, "records": "keywords" },
  query: { "method": "POST", "path": "/api/v1/signals/query", "tag": "signals", "pathParams": [], "body": true, "records": "results" },
  account: { "method": "GET", "path": "/api/v1/account", "tag": "account", "pathParams": [], "body": false, "records": "endpoints" },
  mint_token: { "method": "POST", "path": "/api/v1/tokens", "tag": "tokens", "pathParams": [], "body": true, "records": null },
  list_webhooks: { "method": "GET", "path": "/api/v1/account/webhooks", "tag": "webhooks", "pathParams": [], "body": false, "records": "webhooks" },
  create_webhook: { "method": "POST", "path": "/api/v1/account/webhooks", "tag": "webhooks", "pathParams": [], "body": true, "records": null },
  get_webhook: { "method": "GET", "path": "/api/v1/account/webhooks/{webhook_id}", "tag": "webhooks", "pathParams": ["webhook_id"], "body": false, "records": null },
  delete_webhook: { "method": "DELETE", "path": "/api/v1/account/webhooks/{webhook_id}", "tag": "webhooks", "pathParams": ["webhook_id"], "body": false, "records": null },
  update_webhook: { "method": "PATCH", "path": "/api/v1/account/webhooks/{webhook_id}", "tag": "webhooks", "pathParams": ["webhook_id"], "body": true, "records": null },
  test_webhook: { "method": "POST", "path": "/api/v1/account/webhooks/{webhook_id}/test", "tag": "webhooks", "pathParams": ["webhook_id"], "body": false, "records": null },
  list_webhook_deliveries: { "method": "GET", "path": "/api/v1/account/webhooks/{webhook_id}/deliveries", "tag": "webhooks", "pathParams": ["webhook_id"], "body": false, "records": "deliveries" },
  rotate_webhook_secret: { "method": "POST", "path": "/api/v1/account/webhooks/{webhook_id}/rotate-secret", "tag": "webhooks", "pathParams": ["webhook_id"], "body": false, "records": null }
};

// src/problems.ts
var PROBLEM = {
  /** No answer: the connection failed or timed out (status null). */
  unreachable: "urn:signals:problem:unreachable",
  /** An answer of more pages than the caller allows (nothing returned). */
  tooManyPages: "urn:signals:problem:too-many-pages",
  /** A name the operation table does not have (nothing sent). */
  unknownOperation: "urn:signals:problem:unknown-operation",
  /** A success whose body is not what the document says (not JSON: a proxy's page). */
  unexpectedAnswer: "urn:signals:problem:unexpected-answer",
  /** An error answer without a problem body (a proxy's page): its status says all. */
  notProblemJson: "about:blank",
  /** The API's 400, for a path parameter found missing before asking. */
  invalidRequest: "urn:signals:problem:invalid-request",
  /** The API's 429 when the subscription's monthly privacy budget would be passed: never retried. */
  privacyBudget: "urn:signals:problem:privacy-budget"
};
var SignalsError = class _SignalsError extends Error {
  type;
  title;
  status;
  detail;
  errors;
  request_id;
  retryAfter;
  problem;
  constructor(problem, retryAfter = null, options) {
    super(
      problem.status ? `${problem.status} ${problem.title}: ${problem.detail}` : `${problem.title}: ${problem.detail}`,
      options
    );
    this.name = "SignalsError";
    this.problem = problem;
    this.type = problem.type;
    this.title = problem.title;
    this.status = problem.status;
    this.detail = problem.detail;
    this.errors = Array.isArray(problem.errors) ? problem.errors : [];
    this.request_id = typeof problem.request_id === "string" ? problem.request_id : null;
    this.retryAfter = retryAfter;
  }
  /** The error of an answer that is not a success, from its (already read) body. */
  static fromResponse(response, body) {
    const retryAfter = retryAfterSeconds(response.headers);
    if (body && typeof body === "object" && !Array.isArray(body) && "title" in body) {
      const problem = body;
      return new _SignalsError({
        ...problem,
        status: typeof problem.status === "number" ? problem.status : response.status,
        detail: problem.detail ?? problem.title,
        request_id: problem.request_id ?? response.headers.get("x-request-id") ?? void 0
      }, retryAfter);
    }
    const title = response.statusText || "Error";
    const text = typeof body === "string" && body ? body.slice(0, 200) : title;
    return new _SignalsError({ type: PROBLEM.notProblemJson, title, status: response.status, detail: text }, retryAfter);
  }
};
function retryAfterSeconds(headers) {
  const value = headers.get("retry-after")?.trim() ?? "";
  return /^\d+$/.test(value) ? Number(value) : null;
}

// src/client.ts
var VERSION = "0.1.0";
var MOST_ATTEMPTS = 100;
var READS = /* @__PURE__ */ new Set(["GET", "HEAD", "OPTIONS"]);
var DATA_PATHS = new Set(Object.values(OPERATIONS).filter((op) => op.tag === "signals").map((op) => op.path));
var Reply = class {
  constructor(operation, body, status, headers, notModified, pages, sent) {
    this.operation = operation;
    this.body = body;
    this.status = status;
    this.headers = headers;
    this.notModified = notModified;
    this.pages = pages;
    this.sent = sent;
  }
  operation;
  body;
  status;
  headers;
  notModified;
  pages;
  sent;
  get etag() {
    return this.headers.get("etag");
  }
  /** How many rows the full answer holds (Signals-Total-Rows); null when not said. */
  get totalRows() {
    const value = this.headers.get("signals-total-rows") ?? "";
    return /^\d+$/.test(value) ? Number(value) : null;
  }
  /** The URL (path and query) of the next page (Link rel="next"); null on the last page. */
  get nextPage() {
    return nextLink(this.headers.get("link"));
  }
  /** The hour the answer is for (X-Signals-As-Of, ISO 8601 UTC). */
  get asOf() {
    return this.headers.get("x-signals-as-of");
  }
  /** The subscription's privacy budget after this answer (Signals-Privacy-Budget). */
  get privacyBudget() {
    return privacyBudget(this.headers.get("signals-privacy-budget"));
  }
  /** The rate limit after this answer (RateLimit). */
  get rateLimit() {
    return rateLimit(this.headers.get("ratelimit"));
  }
  get requestId() {
    return this.headers.get("x-request-id");
  }
  /** The records this answer holds (its records member; none for CSV text or an answer without records). */
  get records() {
    if (typeof this.body === "string") return [];
    const field = OPERATIONS[this.operation].records;
    const body = this.body;
    return field && Array.isArray(body?.[field]) ? body[field] : [];
  }
};
var SignalsClient = class {
  baseUrl;
  /** The openapi-fetch client underneath: the same bearer, headers and retries, no ETag memory. */
  raw;
  maxRetries;
  maxRateLimitWait;
  #backoff;
  #timeout;
  #remember;
  #fetch;
  #sleep;
  #random;
  #memory = /* @__PURE__ */ new Map();
  constructor(options = {}) {
    this.baseUrl = (options.baseUrl ?? "").replace(/\/+$/, "");
    if (!this.baseUrl && typeof document === "undefined") {
      throw new TypeError("SignalsClient: baseUrl is needed outside a page (the API's address, e.g. http://127.0.0.1:8000)");
    }
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRateLimitWait = options.maxRateLimitWait ?? 60;
    this.#backoff = options.backoff ?? 0.5;
    this.#timeout = options.timeout ?? 30;
    this.#remember = options.remember ?? 256;
    this.#fetch = options.fetch ?? ((request) => globalThis.fetch(request));
    this.#sleep = options.sleep ?? ((seconds) => new Promise((done) => setTimeout(done, seconds * 1e3)));
    this.#random = options.random ?? Math.random;
    const headers = { Accept: "application/json", ...options.headers };
    const node = globalThis.process?.versions?.node;
    if (node && typeof document === "undefined") {
      headers["User-Agent"] ??= `signals-typescript-client/${VERSION} node/${node}`;
    }
    this.raw = createClient({ baseUrl: this.baseUrl, headers, fetch: (request) => this.#send(request) });
    const token = options.token;
    this.raw.use({
      async onRequest({ request }) {
        const bearer = typeof token === "function" ? await token() : token;
        if (bearer) request.headers.set("Authorization", `Bearer ${bearer}`);
        return request;
      }
    });
  }
  /** An operation's answer body (every page of it with `allPages`); the methods call this. */
  async call(operation, args, options = {}) {
    const reply = options.allPages ? await this.fetchAll(operation, args, options) : await this.fetch(operation, args, options);
    return reply.body;
  }
  /** An operation's answer with its headers: one request (and its retries). */
  async fetch(operation, args, options = {}) {
    const row = OPERATIONS[operation];
    if (!row) {
      throw new SignalsError({
        type: PROBLEM.unknownOperation,
        title: "Unknown operation",
        status: null,
        detail: `There is no operation ${JSON.stringify(operation)}. Operations: ${Object.keys(OPERATIONS).join(", ")}.`
      });
    }
    const given = Object.fromEntries(Object.entries(args ?? {}).filter(([, value]) => value !== void 0 && value !== null));
    const path = Object.fromEntries(row.pathParams.map((name) => [name, given[name]]));
    const missing = row.pathParams.filter((name) => given[name] === void 0 || given[name] === "");
    if (missing.length) {
      throw new SignalsError({
        type: PROBLEM.invalidRequest,
        title: "Invalid or missing parameter",
        status: 400,
        detail: `${missing.join(", ")} is required.`,
        errors: missing.map((name) => ({ name, reason: "is required" }))
      });
    }
    const rest = Object.fromEntries(Object.entries(given).filter(([name]) => !row.pathParams.includes(name)));
    return this.#exchange(
      operation,
      row.method,
      row.path,
      row.pathParams.length ? path : void 0,
      row.body ? void 0 : rest,
      row.body ? rest : void 0,
      options
    );
  }
  /** The next page of an answer (its Link rel="next"; the same body posted again for `query`), or null. */
  async next(reply, options = {}) {
    const link = reply.nextPage;
    if (link === null) return null;
    const url = new URL(link, this.baseUrl || globalThis.location?.href);
    const path = /^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith("//") ? url.pathname + url.search : link;
    return this.#exchange(reply.operation, reply.sent.method, path, void 0, void 0, reply.sent.body, options);
  }
  /** The whole answer, every page of it: the first page, then each next one, the records (or CSV
   * lines) joined in order. Its headers are the first page's; `pages` says how many were fetched.
   * More than `maxPages` pages is a SignalsError of type too-many-pages (nothing returned half). */
  async fetchAll(operation, args, options = {}) {
    const maxPages = options.maxPages ?? 1e3;
    const first = await this.fetch(operation, args, options);
    if (first.body === void 0) return first;
    const field = OPERATIONS[operation].records;
    let body = typeof first.body === "string" ? first.body : structuredClone(first.body);
    let pages = 1;
    for (let page = await this.next(first, options); page !== null; page = await this.next(page, options)) {
      if (pages >= maxPages) {
        throw new SignalsError({
          type: PROBLEM.tooManyPages,
          title: "Too many pages",
          status: null,
          detail: `${operation}: the answer has more than ${maxPages} pages (${first.totalRows} rows); ask with a larger limit or a narrower request.`
        });
      }
      if (typeof body === "string") {
        const text = String(page.body ?? "").replace(/^\ufeff/, "");
        body += text.includes("\n") ? text.slice(text.indexOf("\n") + 1) : "";
      } else if (field) {
        const records = body[field];
        records.push(...page.body?.[field] ?? []);
      }
      pages += 1;
    }
    const headers = new Headers(first.headers);
    headers.delete("link");
    if (pages > 1) headers.delete("etag");
    return new Reply(operation, body, first.status, headers, first.notModified, pages, first.sent);
  }
  async #exchange(operation, method, url, path, query, body, options) {
    const key = JSON.stringify([method, url, path ?? null, query ?? null, body ?? null]);
    const remembered = this.#memory.get(key);
    const etag = options.etag ?? remembered?.etag;
    const csv = (query?.format ?? body?.format) === "csv";
    let result;
    try {
      result = await this.raw.request(method.toLowerCase(), url, {
        params: { path, query },
        body,
        signal: options.signal,
        headers: etag ? { "If-None-Match": etag } : void 0,
        parseAs: csv ? "text" : "json"
      });
    } catch (error2) {
      if (error2 instanceof SyntaxError) {
        throw new SignalsError({
          type: PROBLEM.unexpectedAnswer,
          title: "Unexpected answer",
          status: null,
          detail: `${method} ${url}: the answer is not JSON (${error2.message})`
        }, null, { cause: error2 });
      }
      throw error2;
    }
    const { data, error, response } = result;
    const sent = { method, body };
    if (response.status === 304) {
      const known = remembered !== void 0 && remembered.etag === etag ? structuredClone(remembered.body) : void 0;
      const headers = new Headers(response.headers);
      if (!headers.has("etag") && etag) headers.set("etag", etag);
      return new Reply(operation, known, 304, headers, true, 1, sent);
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
    return new Reply(operation, data, response.status, response.headers, false, 1, sent);
  }
  /** One request as sent by openapi-fetch, retried as the module's comment says; returns the last answer. */
  async #send(request) {
    const reads = READS.has(request.method) || DATA_PATHS.has(new URL(request.url).pathname);
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      let response;
      try {
        response = await this.#attempt(request);
      } catch (error) {
        if (request.signal.aborted) throw error;
        if (!reads || attempt > this.maxRetries) {
          throw new SignalsError(
            {
              type: PROBLEM.unreachable,
              title: "Cannot reach the Signals API",
              status: null,
              detail: `${request.method} ${request.url}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`
            },
            null,
            { cause: error }
          );
        }
        const wait2 = this.#backoffSeconds(attempt);
        waited += wait2;
        await this.#sleep(wait2);
        continue;
      }
      if (response.status !== 429 && response.status !== 503) return response;
      if (response.status === 429 && await refusedByBudget(response)) return response;
      const retryAfter = retryAfterSeconds(response.headers);
      let wait;
      if (retryAfter !== null) {
        if (waited + retryAfter > this.maxRateLimitWait) return response;
        if (attempt >= (response.status === 429 ? MOST_ATTEMPTS : this.maxRetries + 1)) return response;
        wait = retryAfter;
      } else {
        if (attempt > this.maxRetries) return response;
        wait = this.#backoffSeconds(attempt);
      }
      void response.body?.cancel().catch(() => {
      });
      waited += wait;
      await this.#sleep(wait);
    }
  }
  /** One attempt, given up after `timeout` seconds without an answer (or when the caller aborts). */
  async #attempt(request) {
    const controller = new AbortController();
    const abort = () => controller.abort(request.signal.reason);
    if (request.signal.aborted) abort();
    request.signal.addEventListener("abort", abort, { once: true });
    const timer = setTimeout(
      () => controller.abort(new DOMException(`no answer within ${this.#timeout} s`, "TimeoutError")),
      this.#timeout * 1e3
    );
    try {
      return await this.#fetch(new Request(request.clone(), { signal: controller.signal }));
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener("abort", abort);
    }
  }
  #backoffSeconds(attempt) {
    return Math.min(8, this.#backoff * 2 ** (attempt - 1)) + this.#random() * this.#backoff;
  }
};
async function refusedByBudget(response) {
  if (!(response.headers.get("content-type") ?? "").includes("problem+json")) return false;
  try {
    const problem = await response.clone().json();
    return problem?.type === PROBLEM.privacyBudget;
  } catch {
    return false;
  }
}
var camelCase = (name) => name.replace(/_([a-z0-9])/g, (_, letter) => letter.toUpperCase());
var METHOD_NAMES = Object.fromEntries(Object.keys(OPERATIONS).map((id) => [id, camelCase(id)]));
for (const [operation, name] of Object.entries(METHOD_NAMES)) {
  Object.defineProperty(SignalsClient.prototype, name, {
    configurable: true,
    writable: true,
    value: function(args, options) {
      return this.call(operation, args, options);
    }
  });
}
export {
  METHOD_NAMES,
  OPERATIONS,
  PROBLEM,
  Reply,
  SignalsClient,
  SignalsError,
  VERSION,
  nextLink,
  privacyBudget,
  rateLimit
};
