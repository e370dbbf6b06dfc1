/** The API's error shape (RFC 9457 problem+json) and the one exception of the client. */

/** Problem types found on this side, never answered by the API (as the Python client's). */
export const PROBLEM = {
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
  privacyBudget: "urn:signals:problem:privacy-budget",
} as const;

export interface FieldError {
  name: string;
  reason: string;
}

/** A problem as the API writes it: type, title, status, detail, errors, request_id, and any other member. */
export interface Problem {
  type: string;
  title: string;
  status: number | null;
  detail: string;
  errors?: FieldError[];
  request_id?: string;
  [member: string]: unknown;
}

/** Every failure of a call: the API's problem+json as it is, or a problem of `PROBLEM` for a
 * failure found here. `type`, `title`, `status`, `detail`, `errors` and `request_id` are the
 * problem's members; `problem` is all of it (a 429 of the privacy budget has `privacy_budget`, a
 * 422 `narrowings`); `retryAfter` is the answer's Retry-After header, in seconds. */
export class SignalsError extends Error {
  readonly type: string;
  readonly title: string;
  readonly status: number | null;
  readonly detail: string;
  readonly errors: FieldError[];
  readonly request_id: string | null;
  readonly retryAfter: number | null;
  readonly problem: Problem;

  constructor(problem: Problem, retryAfter: number | null = null, options?: { cause?: unknown }) {
    super(problem.status ? `${problem.status} ${problem.title}: ${problem.detail}` : `${problem.title}: ${problem.detail}`,
      options);
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
  static fromResponse(response: Response, body: unknown): SignalsError {
    const retryAfter = retryAfterSeconds(response.headers);
    if (body && typeof body === "object" && !Array.isArray(body) && "title" in body) {
      const problem = body as Problem;
      return new SignalsError({
        ...problem,
        status: typeof problem.status === "number" ? problem.status : response.status,
        detail: problem.detail ?? problem.title,
        request_id: problem.request_id ?? response.headers.get("x-request-id") ?? undefined,
      }, retryAfter);
    }
    const title = response.statusText || "Error";
    const text = typeof body === "string" && body ? body.slice(0, 200) : title;
    return new SignalsError({ type: PROBLEM.notProblemJson, title, status: response.status, detail: text }, retryAfter);
  }
}

/** Retry-After in whole seconds (the API's form), or null when absent or not a number of seconds. */
export function retryAfterSeconds(headers: Headers): number | null {
  const value = headers.get("retry-after")?.trim() ?? "";
  return /^\d+$/.test(value) ? Number(value) : null;
}
