/** The Signals API's TypeScript client: `import { SignalsClient } from "./signals-client.js"`. */
export { METHOD_NAMES, Reply, SignalsClient, VERSION } from "./client";
export type { Answer, AnswerTo, Args, CallOptions, ClientOptions, FetchOptions, Item, Methods, OperationId } from "./client";
export { nextLink, privacyBudget, rateLimit } from "./headers";
export type { PrivacyBudget, RateLimit } from "./headers";
export { OPERATIONS } from "./operations";
export { PROBLEM, SignalsError } from "./problems";
export type { FieldError, Problem } from "./problems";
export type { components, operations, paths } from "./schema";
