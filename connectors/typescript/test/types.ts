// Compile-time tests of the client's types (`tsc --noEmit`, the first step of `npm test`): every
// line marked @ts-expect-error must be refused by the compiler, every other line must compile.
// Nothing here runs.
import { OPERATIONS, SignalsClient } from "../src/index";
import type { Args, Item, operations } from "../src/index";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
const holds = <T extends true>(): T | undefined => undefined;

// The operation table and the schema name the same operations.
holds<Equal<keyof typeof OPERATIONS, keyof operations>>();

export async function typed(api: SignalsClient): Promise<void> {
  const top = await api.topKeywords({ window: "7d", limit: 10, compare: "previous_period" });
  const first: string = top.keywords[0].keyword_raw;
  const count: number = top.keywords[0].suppressions;
  const change: number | null | undefined = top.keywords[0].change?.suppressions.pct;
  void [first, count, change];
  await api.topKeywords();
  await api.topKeywords({}, { allPages: true });

  // @ts-expect-error a window the endpoint does not offer
  await api.topKeywords({ window: "8d" });
  // @ts-expect-error a misspelt parameter
  await api.topKeywords({ window: "7d", limt: 10 });
  // @ts-expect-error a number is not text
  await api.topKeywords({ limit: "10" });

  await api.keywordTimeseries({ keyword: "climate change", bucket: "day" });
  // @ts-expect-error keyword is required
  await api.keywordTimeseries({ window: "7d" });
  // @ts-expect-error and so the arguments are
  await api.keywordTimeseries();

  const rows = await api.query({ window: "7d", group_by: ["country", "time"], bucket: "day" });
  const measure: number = rows.results[0].suppressions;
  void measure;
  const csv: string = await api.query({ window: "7d", format: "csv" });
  void csv;
  // @ts-expect-error a JSON answer is not text
  const notCsv: string = await api.query({ window: "7d" });
  void notCsv;
  // @ts-expect-error group_by takes the dimensions only
  await api.query({ window: "7d", group_by: ["weekday"] });

  const hook = await api.getWebhook({ webhook_id: "wh_1" });
  void hook;
  // @ts-expect-error the path parameter is required
  await api.getWebhook({});
  await api.updateWebhook({ webhook_id: "wh_1", enabled: false });
  const removed: undefined = await api.deleteWebhook({ webhook_id: "wh_1" });
  void removed;

  const reply = await api.fetch("trending", { dimension: "domain" });
  const growth: number = reply.records[0].growth_pct;
  const total: number | null = reply.totalRows;
  void [growth, total];
  const next = await api.next(reply);
  void next?.records[0].value;
  // @ts-expect-error not an operation
  await api.fetch("platform_heat");
}

// Item and Args name an operation's record and arguments.
export const record: Item<"geo_heat"> = { geo_key: "US", label: "United States", suppressions: 1, unique_users: 1,
                                          keyword_count: 1 };
export const args: Args<"trending"> = { window: "24h", min_baseline: 5 };
