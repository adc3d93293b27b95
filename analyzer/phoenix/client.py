"""The few Phoenix REST calls citeline makes, and one clear error per failure.

They are the endpoints ``arize-phoenix-client`` wraps (``GET /v1/projects/{p}/spans``,
``POST /v1/span_annotations?sync=true``, ``POST /v1/document_annotations``,
``/v1/annotation_configs``), plus two GraphQL operations the Phoenix UI itself uses and REST
does not offer (which project a trace is in, with its spans' annotations; deleting annotations
by id), called with
its own HTTP library: importing ``phoenix.client`` where the Phoenix server package is
installed too (our test and compose images) imports the whole server and costs about ten
seconds per command. The API key comes from ``PHOENIX_API_KEY``, never a flag; neither it
nor a URL's credentials ever reach a message.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from citeline.instrumentation.redact import redact_text, redact_url
from citeline.instrumentation.settings import PHOENIX_API_KEY


class PhoenixError(Exception):
    """Phoenix could not be used; the message says why and what to do."""


class GraphQLError(Exception):
    """Phoenix answered a GraphQL request with errors (its message, at most 300 characters)."""


class Rest:
    """The few Phoenix REST calls citeline makes; errors are raised as httpx errors."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        import httpx

        key = PHOENIX_API_KEY.get()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        # credentials in the URL (user:password@) go as basic auth, so the URL httpx logs has none
        parts = httpx.URL(url.rstrip("/"))
        auth = (parts.username, parts.password) if parts.username or parts.password else None
        base = parts.copy_with(username=None, password=None) if auth else parts
        self.http = httpx.Client(base_url=base, headers=headers, timeout=timeout, auth=auth)

    def annotate_documents(self, items: Sequence[dict[str, Any]]) -> None:
        resp = self.http.post("/v1/document_annotations", params={"sync": "true"}, json={"data": list(items)})
        resp.raise_for_status()

    def spans(self, project: str, start: dt.datetime | None, page_size: int) -> list[dict[str, Any]]:
        """Every span starting at or after ``start``, page after page until Phoenix has no more."""
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": page_size}
            if start is not None:
                params["start_time"] = start.isoformat()
            if cursor:
                params["cursor"] = cursor
            resp = self.http.get(f"/v1/projects/{project}/spans", params=params)
            resp.raise_for_status()
            body = resp.json()
            out += body["data"]
            cursor = body.get("next_cursor")
            if not cursor:
                return out

    def annotate(self, items: Sequence[dict[str, Any]]) -> None:
        resp = self.http.post("/v1/span_annotations", params={"sync": "true"}, json={"data": list(items)})
        resp.raise_for_status()

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``data`` of a GraphQL answer; GraphQL errors (HTTP 200) raised as :class:`GraphQLError`."""
        resp = self.http.post("/graphql", json={"query": query, "variables": variables or {}})
        resp.raise_for_status()
        body = resp.json()
        if body.get("errors"):
            raise GraphQLError("; ".join(str(e.get("message", e)) for e in body["errors"])[:300])
        return dict(body.get("data") or {})

    def annotation_config(self, name: str) -> dict[str, Any] | None:
        """The annotation config of that name, or None when Phoenix has none."""
        resp = self.http.get(f"/v1/annotation_configs/{name}")
        if resp.status_code == 404:
            return None
        resp.raise_for_status()
        return dict(resp.json()["data"])

    def create_annotation_config(self, config: dict[str, Any]) -> None:
        resp = self.http.post("/v1/annotation_configs", json=config)
        if resp.status_code == 409:  # created meanwhile (another annotate): the same config
            return
        resp.raise_for_status()

    def assign_annotation_config(self, project: str, name: str) -> None:
        """Offer the config in ``project``'s annotation panel (idempotent in Phoenix)."""
        resp = self.http.put(f"/v1/projects/{project}/annotation_configs/{name}")
        resp.raise_for_status()

    def close(self) -> None:
        self.http.close()


def explain(exc: Exception, url: str, project: str | None = None) -> PhoenixError:
    """One clear message per failure; the URL's credentials and the API key never in it."""
    import httpx

    key = PHOENIX_API_KEY.get()
    shown = redact_url(url)
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        why = redact_text(str(exc), [key])
        return PhoenixError(f"cannot reach Phoenix at {shown} ({why}); is it running? check --phoenix")
    if isinstance(exc, httpx.TimeoutException):
        return PhoenixError(f"Phoenix at {shown} did not answer in time; try again or check the server")
    if isinstance(exc, httpx.HTTPStatusError):
        code = exc.response.status_code
        if code in (401, 403):
            return PhoenixError(
                f"Phoenix at {shown} refused the request ({code}): it requires authentication; "
                "set PHOENIX_API_KEY to a key with access"
            )
        if code == 404 and project is not None:
            return PhoenixError(
                f"no project {project!r} in Phoenix at {shown}; check --project "
                "(the Phoenix UI lists projects on its home page)"
            )
        body = redact_text(exc.response.text[:200], [key])
        return PhoenixError(f"Phoenix at {shown} answered {code}: {body}")
    if isinstance(exc, GraphQLError):
        return PhoenixError(f"Phoenix at {shown} refused a GraphQL request: {redact_text(str(exc), [key])}")
    why = redact_text(f"{type(exc).__name__}: {exc}", [key])
    return PhoenixError(f"talking to Phoenix at {shown} failed: {why}")
