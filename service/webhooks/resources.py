"""The management API's responders: /api/v1/account/webhooks (list, create), /{id} (read, update, delete),
/{id}/test (a signed test delivery, queued for the worker), /{id}/deliveries (attempts, newest first, paginated),
/{id}/rotate-secret. Any plan manages its own subscription's webhooks; another subscription's id
answers 404, exactly like an id that does not exist. Requests count against the rate limit. Their
paths and parameters are the operation table's (service/api/operations.py), which service/app.py routes."""

from __future__ import annotations

import json
from typing import Any, TypeGuard

import falcon

from paramcheck import FieldError, summary
from service.api.operations import DELIVERIES_BEFORE, DELIVERIES_LIMIT, WEBHOOK_PATH, WEBHOOKS_PATH
from service.api.windows import iso_z
from service.clock import Clock
from service.http.errors import WEBHOOK_LIMIT, Problem
from service.http.resources.json_body import read_json_body
from service.webhooks.evaluate import payload
from service.webhooks.fields import MAX_WEBHOOKS_PER_SUBSCRIPTION, check_body
from service.webhooks.webhook_store import TooManyWebhooks, WebhookStore, public


def _json(resp: falcon.Response, body: Any, status: str = falcon.HTTP_200) -> None:
    resp.status = status
    resp.content_type = falcon.MEDIA_JSON
    resp.set_header("Cache-Control", "no-store")
    resp.data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _not_found(webhook_id: str) -> Problem:
    return Problem(404, f"No webhook {webhook_id!r} in this key's subscription.")


def _invalid(errors: list[FieldError]) -> Problem:
    return Problem(400, summary(errors, "Field"), errors=errors)


class _Base:
    rate_limited = True

    def __init__(self, store: WebhookStore, clock: Clock, *, allow_private: bool) -> None:
        self.store = store
        self.clock = clock
        self.allow_private = allow_private

    @staticmethod
    def _no_query(req: falcon.Request) -> None:
        if req.params:
            raise _invalid([FieldError(name, "is not a parameter of this endpoint") for name in req.params])


class WebhooksResource(_Base):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self._no_query(req)
        rows = self.store.list(req.context.principal.subscription_id)
        _json(resp, {"webhooks": [public(r) for r in rows], "limit": MAX_WEBHOOKS_PER_SUBSCRIPTION})

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        self._no_query(req)
        values, errors = check_body(read_json_body(req), creating=True, allow_private=self.allow_private)
        if errors:
            raise _invalid(errors)
        try:
            row, secret = self.store.create(req.context.principal.subscription_id, values)
        except TooManyWebhooks:
            raise Problem(409, f"A subscription may have at most {MAX_WEBHOOKS_PER_SUBSCRIPTION} webhooks; delete "
                               f"one (DELETE {WEBHOOKS_PATH}/{{id}}) before creating another.",
                          kind=WEBHOOK_LIMIT, extensions={"limit": MAX_WEBHOOKS_PER_SUBSCRIPTION}) from None
        resp.location = f"{WEBHOOKS_PATH}/{row.id}"
        _json(resp, {**public(row), "secret": secret}, falcon.HTTP_201)


class WebhookResource(_Base):
    def _row(self, req: falcon.Request, webhook_id: str) -> Any:
        row = self.store.get(req.context.principal.subscription_id, webhook_id)
        if row is None:
            raise _not_found(webhook_id)
        return row

    def on_get(self, req: falcon.Request, resp: falcon.Response, webhook_id: str) -> None:
        self._no_query(req)
        _json(resp, public(self._row(req, webhook_id)))

    def on_patch(self, req: falcon.Request, resp: falcon.Response, webhook_id: str) -> None:
        self._no_query(req)
        self._row(req, webhook_id)  # 404 before 400: another's id reveals nothing
        values, errors = check_body(read_json_body(req), creating=False, allow_private=self.allow_private)
        if errors:
            raise _invalid(errors)
        row = self.store.update(req.context.principal.subscription_id, webhook_id, values)
        if row is None:
            raise _not_found(webhook_id)
        _json(resp, public(row))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, webhook_id: str) -> None:
        self._no_query(req)
        if not self.store.delete(req.context.principal.subscription_id, webhook_id):
            raise _not_found(webhook_id)
        resp.status = falcon.HTTP_204

    def on_post_rotate(self, req: falcon.Request, resp: falcon.Response, webhook_id: str) -> None:
        self._no_query(req)
        rotated = self.store.rotate_secret(req.context.principal.subscription_id, webhook_id)
        if rotated is None:
            raise _not_found(webhook_id)
        row, secret = rotated
        _json(resp, {**public(row), "secret": secret})

    def on_post_test(self, req: falcon.Request, resp: falcon.Response, webhook_id: str) -> None:
        """A trending_alert with no alerts, queued for the worker process, which sends it within about
        a second (and retries it like any delivery if it fails). The web worker never waits on the
        receiver: its outcome is read from /deliveries, by the delivery_id answered here."""
        self._no_query(req)
        row = self._row(req, webhook_id)
        now = self.clock.now()
        delivery_id = self.store.enqueue(
            row.id, "test", lambda _id: payload(row.id, row.window, row.dimension, row.threshold_pct, now, "[]"), now)
        resp.location = f"{WEBHOOK_PATH.format(webhook_id=row.id)}/deliveries"
        _json(resp, {"delivery_id": delivery_id, "attempt": None}, falcon.HTTP_202)

    def on_get_deliveries(self, req: falcon.Request, resp: falcon.Response, webhook_id: str) -> None:
        assert DELIVERIES_LIMIT.minimum is not None and DELIVERIES_LIMIT.maximum is not None
        assert DELIVERIES_BEFORE.maximum is not None
        low, high, default = int(DELIVERIES_LIMIT.minimum), int(DELIVERIES_LIMIT.maximum), DELIVERIES_LIMIT.default
        errors = [FieldError(n, "is not a parameter of this endpoint (limit, before)")
                  for n in req.params if n not in ("limit", "before")]
        limit, before = default, None
        raw = req.params.get("limit")
        if raw is not None:
            if not _is_digits(raw) or not low <= int(raw) <= high:
                errors.append(FieldError("limit", f"must be an integer from {low} to {high}"))
            else:
                limit = int(raw)
        raw = req.params.get("before")
        if raw is not None:
            if not _is_digits(raw) or int(raw) > DELIVERIES_BEFORE.maximum:
                errors.append(FieldError("before", "must be the next_before of the previous page"))
            else:
                before = int(raw)
        if errors:
            raise _invalid(errors)
        self._row(req, webhook_id)
        rows = self.store.attempts(req.context.principal.subscription_id, webhook_id, limit + 1, before)
        more = len(rows) > limit
        rows = rows[:limit]
        items = [{"id": r.id, "delivery_id": r.delivery_id, "event": r.event, "attempt": r.attempt,
                  "attempted_at": iso_z(r.started_at), "status_code": r.status_code, "duration_ms": r.duration_ms,
                  "error": r.error, "outcome": r.outcome} for r in rows]
        next_before = rows[-1].id if more and rows else None
        body = {"deliveries": items, "next_before": next_before}
        if next_before is not None:
            resp.append_link(f"{WEBHOOK_PATH.format(webhook_id=webhook_id)}/deliveries?limit={limit}"
                             f"&before={next_before}", "next")
        _json(resp, body)


def _is_digits(raw: object) -> TypeGuard[str]:
    """ASCII digits only ('１' and '١' are digits to str.isdigit, and int() takes them)."""
    return isinstance(raw, str) and raw.isascii() and raw.isdigit()


def resources(store: WebhookStore, clock: Clock, *, allow_private: bool) -> dict[str, Any]:
    """The responders of the table's webhook operations (service/api/operations.py), by the name the
    table gives them."""
    return {"webhooks": WebhooksResource(store, clock, allow_private=allow_private),
            "webhook": WebhookResource(store, clock, allow_private=allow_private)}
