"""Waiting for spans to arrive in Phoenix: it answers an OTLP export at once and stores the spans a
moment later, so a command that annotates what it just sent polls for them first.

``citeline demo --phoenix URL`` sends its spans, analyzes, then waits here until every span of the
run is in the project before ``annotate`` (docs/phoenix.md).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable

from citeline.analyzer.phoenix.client import PhoenixError, Rest, explain
from citeline.instrumentation.redact import redact_url

POLL = 0.25
"""Seconds between two looks at the project while spans are still missing."""


def project_id(url: str, project: str) -> str:
    """The Phoenix id of ``project`` (what its pages' URLs hold); a PhoenixError when Phoenix cannot be used."""
    rest = Rest(url)
    try:
        resp = rest.http.get(f"/v1/projects/{project}")
        resp.raise_for_status()
        return str(resp.json()["data"]["id"])
    except Exception as exc:  # every failure becomes one clear message
        raise explain(exc, url, project) from exc
    finally:
        rest.close()


def reachable(url: str) -> None:
    """Raise a PhoenixError (unreachable, refuses the key) unless Phoenix at ``url`` answers its API."""
    rest = Rest(url, timeout=10.0)
    try:
        rest.http.get("/v1/projects", params={"limit": 1}).raise_for_status()
    except Exception as exc:  # every failure becomes one clear message
        raise explain(exc, url) from exc
    finally:
        rest.close()


def wait_for_spans(
    url: str,
    project: str,
    span_ids: Iterable[str],
    since: dt.datetime,
    timeout: float = 120.0,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Return once every span id of ``span_ids`` is in ``project`` (its spans that start at or after
    ``since``); a PhoenixError naming how many are missing when they are not all there by ``timeout``."""
    import httpx

    wanted = set(span_ids)
    deadline = clock() + timeout
    rest = Rest(url)
    try:
        while True:
            try:
                seen = {str(s["context"]["span_id"]) for s in rest.spans(project, since, 1000)}
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code != 404:  # 404: the project appears with its first span
                    raise explain(exc, url, project) from exc
                seen = set()
            except Exception as exc:  # every other failure becomes one clear message
                raise explain(exc, url, project) from exc
            missing = wanted - seen
            if not missing:
                return
            if clock() > deadline:
                raise PhoenixError(
                    f"{len(missing)} of {len(wanted)} span(s) sent did not show in project {project!r} of Phoenix "
                    f"at {redact_url(url)} within {timeout:.0f} s; is that the Phoenix the OTLP endpoint feeds?"
                )
            time.sleep(POLL)
    finally:
        rest.close()
