"""The API as declared: the operation table, the endpoints, their parameters and records, the OpenAPI document, plans, paging, time windows."""
