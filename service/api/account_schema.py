"""GET /api/v1/account's answer (service/http/resources/account.py) as JSON Schema: who a key belongs to."""

from __future__ import annotations

from typing import Any

from service.api.record_schemas import record
from service.api.tiers import Tier

ACCOUNT_PATH = "/api/v1/account"
ACCOUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subscription": {"type": "string", "description": "Name of the key's subscription."},
        "plan": {"type": "string", "enum": [t.slug for t in Tier], "description": "The subscription's plan (tier)."},
        "plan_label": {"type": "string", "description": "The plan's name as written in the docs (Observer, ...)."},
        "requests_per_minute": {"type": "integer", "minimum": 1, "description": "The plan's rate limit."},
        "endpoints": {
            "type": "array",
            "description": "The endpoints the plan may call.",
            "items": record({"operation": {"type": "string", "description": "operationId in this document."},
                              "method": {"type": "string", "enum": ["GET", "POST"]},
                              "path": {"type": "string"}}),
        },
        "key_prefix": {"type": "string", "description": "The key's public prefix (never the key or its hash)."},
        "key_expires_at": {"type": ["string", "null"], "format": "date-time",
                           "description": "When the key expires; null when it does not."},
        "disclaimer": {"type": "string", "minLength": 1},
    },
    "additionalProperties": False,
}
ACCOUNT_SCHEMA["required"] = list(ACCOUNT_SCHEMA["properties"])
