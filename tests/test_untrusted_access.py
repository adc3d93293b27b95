"""Access verdicts never borrow: the principal is what the trace says, in any OTLP encoding.

A small app written with the real decorators answers one staff-only question; its trace
files are then re-encoded the way other writers encode OTLP/JSON (the Collector's protobuf
JSON omits empty fields: an empty array is ``{"arrayValue":{}}``, an int is a string), and
analyzed for real. Nothing is mocked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.analyzer.run.analyze import analyze
from citeline.instrumentation import context_assembly, generation, request, retrieval
from tests.conftest import make_tracing

GROUPS_KEY = "citeline.request.principal.groups"
STAFF_TEXT = "Employees get 25% off accessories."
CORPUS = {
    "staff#1": {"chunk_id": "staff#1", "doc_id": "staff", "version": "v1", "text": STAFF_TEXT},
    "public#1": {"chunk_id": "public#1", "doc_id": "public", "version": "v1", "text": "Orders over $50 ship free."},
    # the staff text again, under an id the gold set does not list (a mirror in the index)
    "mirror#7": {"chunk_id": "mirror#7", "doc_id": "mirror", "version": "v1", "text": STAFF_TEXT},
}
GOLD = """
corpus:
  - {chunk_id: "staff#1", doc_id: staff, version: v1, acl: [staff], text: "Employees get 25% off accessories."}
  - {chunk_id: "public#1", doc_id: public, version: v1, text: "Orders over $50 ship free."}
cases:
  - case_id: staff-perk
    question: What discount do employees get?
    as_of: 2026-08-10
    principal: {id: sam, groups: [staff]}
    claims:
      - claim_id: pct
        text: Employees get 25% off accessories.
        support: [["staff#1"]]
"""
QUESTION = "What discount do employees get?"


@retrieval
def _search(query: str, ids: list[str]) -> list[dict[str, Any]]:
    return [CORPUS[i] for i in ids]


@context_assembly
def _assemble(query: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return hits


@generation
def _answer(prompt: Any, said: str) -> str:
    return said


def _write(tmp_path: Path, asks: list[dict[str, Any]]) -> Path:
    """One trace per ask, written by the real decorators; the trace folder."""
    t = make_tracing(tmp_path)
    try:
        for a in asks:
            with request(question=QUESTION, case_id=a.get("case_id"), principal=a.get("principal"), as_of="2026-08-10"):
                hits = _search(QUESTION, a.get("ids", ["staff#1", "public#1"]))
                _answer(_assemble(QUESTION, hits), a.get("said", "Employees get 25% off accessories [1]."))
    finally:
        t.handle.shutdown()
    return t.trace_dir


def _gold(tmp_path: Path) -> Path:
    path = tmp_path / "gold.yaml"
    path.write_text(GOLD)
    return path


def _reencode(trace_dir: Path, groups: Any, *, collector: bool = False, one_line: bool = False) -> None:
    """Rewrite every request span's principal groups as ``groups`` (an AnyValue dict, or None to drop
    the attribute); ``collector`` also writes ints as strings and drops empty fields as the Collector's
    protobuf JSON does; ``one_line`` puts every span of the folder in one line (a Collector batch)."""
    files = sorted(trace_dir.glob("*.jsonl"))
    docs = [json.loads(line) for f in files for line in f.read_text().splitlines() if line]
    for doc in docs:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = [a for a in span["attributes"] if a["key"] != GROUPS_KEY]
                    is_request = any(
                        a["key"] == "citeline.stage" and a["value"] == {"stringValue": "request"}
                        for a in span["attributes"]
                    )
                    if is_request and groups is not None:
                        attrs.append({"key": GROUPS_KEY, "value": groups})
                    span["attributes"] = [_collector(a) for a in attrs] if collector else attrs
    if one_line:
        docs = [{"resourceSpans": [rs for d in docs for rs in d["resourceSpans"]]}]
    for f in files:
        f.unlink()
    (trace_dir / "reencoded.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))


def _collector(attr: dict[str, Any]) -> dict[str, Any]:
    def value(v: dict[str, Any]) -> dict[str, Any]:
        if "intValue" in v:
            return {"intValue": str(v["intValue"])}
        if v.get("arrayValue") is not None:
            items = [value(x) for x in v["arrayValue"].get("values") or []]
            return {"arrayValue": {"values": items}} if items else {"arrayValue": {}}
        if v.get("stringValue") == "":
            return {}
        return v

    return {"key": attr["key"], "value": value(attr["value"])}


def _rows(tmp_path: Path, trace_dir: Path) -> list[dict[str, Any]]:
    result = analyze(":memory:", gold=_gold(tmp_path), traces=[trace_dir])
    return [r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None]


def _request_span(rows: list[dict[str, Any]], tmp_path: Path) -> str:
    return str(rows[0]["span_id"])


GUEST_EMPTY_COLLECTOR: dict[str, Any] = {"arrayValue": {}}
GUEST_EMPTY_CITELINE: dict[str, Any] = {"arrayValue": {"values": []}}
STAFF = {"arrayValue": {"values": [{"stringValue": "staff"}]}}


@pytest.mark.parametrize("by_case_id", [True, False], ids=["by-case-id", "by-question"])
def test_a_guest_with_groups_as_the_collector_writes_them_is_an_access_violation(
    tmp_path: Path, by_case_id: bool
) -> None:
    # on the previous main: ok, judged with the gold case's [staff]
    traces = _write(tmp_path, [{"case_id": "staff-perk" if by_case_id else None, "principal": {"id": "guest"}}])
    _reencode(traces, GUEST_EMPTY_COLLECTOR, collector=True)
    [row] = _rows(tmp_path, traces)
    assert (row["bucket"], row["stage"], row["reason"]) == (
        "access_violation",
        "retrieval",
        "restricted staff#1 reached retrieval",
    )


def test_a_guest_as_citelines_exporter_writes_it_and_a_staff_twin(tmp_path: Path) -> None:
    traces = _write(
        tmp_path,
        [
            {"case_id": "staff-perk", "principal": {"id": "guest", "groups": []}},
            {"case_id": "staff-perk", "principal": {"id": "sam", "groups": ["staff"]}},
        ],
    )
    rows = _rows(tmp_path, traces)
    assert sorted((r["bucket"], r["stage"]) for r in rows) == [("access_violation", "retrieval"), ("ok", None)]


def test_no_groups_recorded_fails_closed_as_an_access_violation(tmp_path: Path) -> None:
    # on the previous main: ok (the gold case's groups stood in for the missing ones); then not_evaluable at
    # the request span while the Collector's empty groups gave access_violation (issue #33): a restricted
    # chunk served to a request whose entitlement nobody recorded fails closed, the reason says why
    traces = _write(tmp_path, [{"case_id": "staff-perk", "principal": None}])
    [row] = _rows(tmp_path, traces)
    assert (row["bucket"], row["stage"]) == ("access_violation", "retrieval")
    assert row["reason"] == (
        "restricted staff#1 reached retrieval, and the request recorded no principal groups, so it is entitled "
        'to none: record request(principal={"id": ..., "groups": [...]}) (an empty list of groups is a guest)'
    )
    assert row["flags"] == ["access_violation"]


def test_an_id_without_groups_fails_closed_like_empty_groups(tmp_path: Path) -> None:
    # the groups key absent (an id alone) vs the Collector's empty array: the same bucket and stage
    absent = _write(tmp_path / "absent", [{"case_id": "staff-perk", "principal": {"id": "sam"}}])
    empty = _write(tmp_path / "empty", [{"case_id": "staff-perk", "principal": {"id": "guest"}}])
    _reencode(empty, GUEST_EMPTY_COLLECTOR, collector=True)
    [a] = _rows(tmp_path / "absent", absent)
    [e] = _rows(tmp_path / "empty", empty)
    assert (a["bucket"], a["stage"], a["span_id"] is not None) == (e["bucket"], e["stage"], True)
    assert a["bucket"] == "access_violation"
    assert "recorded no principal groups" in a["reason"] and "recorded no principal groups" not in e["reason"]


def test_a_request_that_touched_nothing_restricted_needs_no_principal(tmp_path: Path) -> None:
    traces = _write(
        tmp_path, [{"case_id": "staff-perk", "principal": None, "ids": ["public#1"], "said": "Orders ship free."}]
    )
    [row] = _rows(tmp_path, traces)
    assert row["bucket"] == "retrieval_miss"  # the chain broke at retrieval, access had nothing to say


def test_restricted_text_under_an_id_the_gold_set_does_not_list_is_restricted(tmp_path: Path) -> None:
    # on the previous main: ok/attribution, the ACL check trusted ids only
    traces = _write(
        tmp_path,
        [
            {"case_id": "staff-perk", "principal": {"id": "p", "groups": ["public"]}, "ids": ["mirror#7"]},
            {"case_id": "staff-perk", "principal": {"id": "sam", "groups": ["staff"]}, "ids": ["mirror#7"]},
        ],
    )
    guest, staff = sorted(_rows(tmp_path, traces), key=lambda r: r["bucket"])
    assert (guest["bucket"], guest["stage"], guest["reason"]) == (
        "access_violation",
        "retrieval",
        "restricted mirror#7 (the text of staff#1) reached retrieval",
    )
    assert "access_violation" not in staff["flags"] and staff["bucket"] != "not_evaluable"


_ENCODINGS: dict[str, list[Any]] = {
    "guest": [GUEST_EMPTY_COLLECTOR, GUEST_EMPTY_CITELINE],
    "public": [{"arrayValue": {"values": [{"stringValue": "public"}]}}],
    "staff": [STAFF],
    "unknown": [None, {}, {"arrayValue": None}],
}
# unknown groups fail closed (issue #33): the same bucket as a guest's, the reason saying they were not recorded
_VERDICT = {"guest": "access_violation", "public": "access_violation", "staff": "ok", "unknown": "access_violation"}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("encodings")
    return _write(tmp, [{"case_id": "staff-perk", "principal": {"id": "x", "groups": ["staff"]}}])


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    who=st.sampled_from(sorted(_ENCODINGS)),
    pick=st.integers(0, 2),
    collector=st.booleans(),
    one_line=st.booleans(),
)
def test_the_same_request_gets_the_same_verdict_in_every_encoding(
    written: Path, tmp_path_factory: pytest.TempPathFactory, who: str, pick: int, collector: bool, one_line: bool
) -> None:
    tmp = tmp_path_factory.mktemp("case")
    traces = tmp / "traces"
    traces.mkdir()
    for f in written.glob("*.jsonl"):
        (traces / f.name).write_bytes(f.read_bytes())
    encodings = _ENCODINGS[who]
    _reencode(traces, encodings[pick % len(encodings)], collector=collector, one_line=one_line)
    [row] = _rows(tmp, traces)
    assert row["bucket"] == _VERDICT[who], (who, row["reason"])
    assert ("recorded no principal groups" in row["reason"]) == (who == "unknown")
