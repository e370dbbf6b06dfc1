/** What an answer's headers say, read as the other consumers read them (connectors/client.py). */

const LINK_NEXT = /<([^>]*)>\s*;[^,]*?\brel="?next"?/i;

/** The target of `rel="next"` in a Link header value (RFC 8288), or null. */
export function nextLink(value: string | null | undefined): string | null {
  const match = LINK_NEXT.exec(value ?? "");
  return match ? match[1] : null;
}

/** The subscription's privacy budget after an answer (Signals-Privacy-Budget, in epsilon). */
export interface PrivacyBudget {
  remaining: number;
  limit: number;
  spent: number;
  /** What this answer added: 0 for an answer already received. */
  charged: number;
  /** When the budget renews (ISO 8601 UTC). */
  renews: string;
}

/** `remaining=199998.250, limit=200000000.000, spent=1.750, charged=1.750, renews="2026-12-01T00:00:00Z"`
 * (an RFC 8941 dictionary), or null when absent or unreadable (a deployment without a budget sends none). */
export function privacyBudget(value: string | null | undefined): PrivacyBudget | null {
  if (!value) return null;
  const members = new Map<string, string>();
  for (const part of value.split(",")) {
    const [name, ...text] = part.split("=");
    members.set(name.trim(), text.join("=").trim().replace(/^"|"$/g, ""));
  }
  const number = (name: string, fallback?: string) => Number(members.get(name) ?? fallback);
  const budget = { remaining: number("remaining"), limit: number("limit"), spent: number("spent"),
                   charged: number("charged", "0"), renews: members.get("renews") ?? "" };
  return [budget.remaining, budget.limit, budget.spent, budget.charged].every(Number.isFinite) ? budget : null;
}

/** The rate limit after an answer: the IETF httpapi RateLimit field, `"observer";r=29;t=60`. */
export interface RateLimit {
  /** The policy's name (the plan). */
  policy: string;
  /** Requests left in the moving window. */
  remaining: number;
  /** Seconds until a request is given back. */
  reset: number;
}

export function rateLimit(value: string | null | undefined): RateLimit | null {
  const match = /^\s*"([^"]*)"\s*;(.*)$/.exec(value ?? "");
  if (!match) return null;
  const params = new Map(match[2].split(";").map((p) => p.trim().split("=") as [string, string]));
  const remaining = Number(params.get("r")), reset = Number(params.get("t"));
  return Number.isFinite(remaining) && Number.isFinite(reset) ? { policy: match[1], remaining, reset } : null;
}
