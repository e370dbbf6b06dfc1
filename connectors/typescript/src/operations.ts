// Made by scripts/generate.mjs from the API's OpenAPI document: do not edit, run `npm run generate`.

/** Every operation of the API by operationId: method, path, tag, path parameters, whether it takes a
 * JSON body, and the answer's member that holds its records. The client makes one method of each. */
export const OPERATIONS = {
  top_keywords: {"method":"GET","path":"/api/v1/signals/top-keywords","tag":"signals","pathParams":[],"body":false,"records":"keywords"},
  keyword_timeseries: {"method":"GET","path":"/api/v1/signals/keyword-timeseries","tag":"signals","pathParams":[],"body":false,"records":"timeseries"},
  domain_timeseries: {"method":"GET","path":"/api/v1/signals/domain-timeseries","tag":"signals","pathParams":[],"body":false,"records":"timeseries"},
  geo_heat: {"method":"GET","path":"/api/v1/signals/geo-heat","tag":"signals","pathParams":[],"body":false,"records":"regions"},
  trending: {"method":"GET","path":"/api/v1/signals/trending","tag":"signals","pathParams":[],"body":false,"records":"trending"},
  keyword_activity: {"method":"GET","path":"/api/v1/signals/keyword-activity","tag":"signals","pathParams":[],"body":false,"records":"keywords"},
  query: {"method":"POST","path":"/api/v1/signals/query","tag":"signals","pathParams":[],"body":true,"records":"results"},
  account: {"method":"GET","path":"/api/v1/account","tag":"account","pathParams":[],"body":false,"records":"endpoints"},
  mint_token: {"method":"POST","path":"/api/v1/tokens","tag":"tokens","pathParams":[],"body":true,"records":null},
  list_webhooks: {"method":"GET","path":"/api/v1/account/webhooks","tag":"webhooks","pathParams":[],"body":false,"records":"webhooks"},
  create_webhook: {"method":"POST","path":"/api/v1/account/webhooks","tag":"webhooks","pathParams":[],"body":true,"records":null},
  get_webhook: {"method":"GET","path":"/api/v1/account/webhooks/{webhook_id}","tag":"webhooks","pathParams":["webhook_id"],"body":false,"records":null},
  delete_webhook: {"method":"DELETE","path":"/api/v1/account/webhooks/{webhook_id}","tag":"webhooks","pathParams":["webhook_id"],"body":false,"records":null},
  update_webhook: {"method":"PATCH","path":"/api/v1/account/webhooks/{webhook_id}","tag":"webhooks","pathParams":["webhook_id"],"body":true,"records":null},
  test_webhook: {"method":"POST","path":"/api/v1/account/webhooks/{webhook_id}/test","tag":"webhooks","pathParams":["webhook_id"],"body":false,"records":null},
  list_webhook_deliveries: {"method":"GET","path":"/api/v1/account/webhooks/{webhook_id}/deliveries","tag":"webhooks","pathParams":["webhook_id"],"body":false,"records":"deliveries"},
  rotate_webhook_secret: {"method":"POST","path":"/api/v1/account/webhooks/{webhook_id}/rotate-secret","tag":"webhooks","pathParams":["webhook_id"],"body":false,"records":null},
} as const;
