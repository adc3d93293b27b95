"""What people read is escaped for its medium: a payload planted in every field a trace or gold
file controls reaches no reader as markup, link, image or terminal escape.

The traces come from a small app written with the real decorators; the Markdown report is
rendered by GitHub's own renderer (cmarkgfm, raw HTML allowed as GitHub's pipeline parses it)
and the terminal output is read as the CLI writes it.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.escaping import is_span_id, is_trace_id, md, term
from citeline.analyzer.reports.report import span_url, trace_url
from citeline.instrumentation import context_assembly, generation, request, retrieval
from tests.conftest import make_tracing
from tests.extras import needs

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"
TRACKER = "![t](http://track.example/t.png)"
LINK = "[click](javascript:alert(3))"
OSC8 = "\x1b]8;;http://evil.example/\x1b\\open me\x1b]8;;\x1b\\"
CLEAR = "\x1b[2J\x1b[31m"
PAYLOAD = f"{SCRIPT} {IMG} {TRACKER} {LINK} {OSC8} {CLEAR} www.evil.example a|b"
CASE = "evil|<b>case</b>"
CHUNK = "![c](http://track.example/c.png)"
BAD_SPAN = "not-hex|<i>x</i>"

GOLD = f"""
corpus:
  - {{chunk_id: {json.dumps(CHUNK)}, doc_id: d, version: v1, text: "Refunds take 5 business days."}}
cases:
  - case_id: {json.dumps(CASE)}
    question: How long do refunds take?
    claims:
      - claim_id: {json.dumps("days" + SCRIPT)}
        text: Refunds take 5 business days.
        support: [[{json.dumps(CHUNK)}]]
  - case_id: broken-adapter
    question: Which adapter broke?
    claims:
      - claim_id: c
        text: Refunds take 5 business days.
        support: [[{json.dumps(CHUNK)}]]
"""


def _raise(_hits: Any) -> Any:
    raise ValueError(f"adapter says {IMG} {OSC8} {CLEAR}")


@retrieval
def _search(q: str) -> list[dict[str, Any]]:
    return [{"chunk_id": CHUNK, "doc_id": "d", "version": "v1", "text": "Refunds take 5 business days."}]


@retrieval(to_chunks=_raise)
def _broken_search(q: str) -> list[dict[str, Any]]:
    return []


@context_assembly
def _assemble(q: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return hits


@generation
def _answer(prompt: Any) -> str:
    return f"Refunds take 9 business days [1]. {PAYLOAD} takes 3 days [7]."


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    t = make_tracing(tmp)
    try:
        with request(question="How long do refunds take?", case_id=CASE):
            _answer(_assemble("q", _search("q")))
        with request(question="Which adapter broke?", case_id="broken-adapter"):
            _answer(_assemble("q", _broken_search("q")))
    finally:
        t.handle.shutdown()
    # a hostile file names a generation span id that is no span id
    for f in t.trace_dir.glob("*.jsonl"):
        lines = []
        for line in f.read_text().splitlines():
            doc = json.loads(line)
            for rs in doc["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        if span["name"] == "_answer" and "broken" not in json.dumps(doc):
                            span["spanId"] = BAD_SPAN
            lines.append(json.dumps(doc))
        f.write_text("\n".join(lines) + "\n")
    (tmp / "gold.yaml").write_text(GOLD)
    db = tmp / "store.duckdb"
    code = main(["analyze", "--traces", str(t.trace_dir), "--gold", str(tmp / "gold.yaml"), "--db", str(db), "--quiet"])
    assert code == 0
    return db


def _gfm(text: str) -> str:
    needs("cmarkgfm", "GitHub's Markdown renderer")
    import cmarkgfm
    from cmarkgfm.cmark import Options

    rendered: str = cmarkgfm.markdown_to_html_with_extensions(
        text, options=Options.CMARK_OPT_UNSAFE, extensions=["table", "autolink", "strikethrough", "tagfilter"]
    )
    return rendered


def test_the_markdown_report_renders_no_markup_link_or_image_from_a_trace(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--db", str(store), "--format", "markdown", "--phoenix", "http://127.0.0.1:6006"]) == 0
    text = capsys.readouterr().out
    page = _gfm(text)
    assert "<script" not in page and "<img" not in page and "<b>" not in page and "<i>" not in page
    hrefs = re.findall(r'href="([^"]*)"', page)
    spans = [h for h in hrefs if h.startswith("http://127.0.0.1:6006/redirects/spans/")]
    traces = [h for h in hrefs if h.startswith("http://127.0.0.1:6006/redirects/traces/")]
    assert spans and traces and len(spans) + len(traces) == len(hrefs), hrefs
    assert all(is_span_id(h.rsplit("/", 1)[1]) for h in spans)
    assert all(is_trace_id(h.rsplit("/", 1)[1]) for h in traces)
    # every row of the failing-claims table keeps its eight cells, basis among them (a pipe in an id or a claim
    # splits none)
    table = page[page.index("<th>reason</th>") :]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]
    assert rows and all(r.count("<td") == 8 for r in rows), rows
    # the text is still there, shown as written
    assert html.escape(CASE) in page or "evil|&lt;b&gt;case&lt;/b&gt;" in page
    assert "\x1b" not in text


def test_the_terminal_gets_no_escape_sequence(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = store.parent / "gold.yaml"
    main(["analyze", "--gold", str(gold), "--db", str(store)])
    main(["report", "--db", str(store)])
    out = capsys.readouterr()
    for stream in (out.out, out.err):
        assert "\x1b" not in stream and "\x9b" not in stream
        assert not any(ord(c) < 32 and c not in "\n" for c in stream), repr(stream[:400])
    assert "adapter says" in out.out  # the adapter error is shown, only cleaned
    assert "open me" in out.out


def test_the_html_report_escapes_every_field(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", "--db", str(store), "--format", "html", "--out", str(out)]) == 0
    page = out.read_text()
    assert SCRIPT not in page and IMG not in page and "<b>case</b>" not in page and "\x1b" not in page
    assert "javascript:" not in re.findall(r'href="([^"]*)"', page).__str__()


def test_json_keeps_text_as_it_came_and_links_only_real_ids(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--db", str(store), "--format", "json", "--phoenix", "http://u:pw@127.0.0.1:6006"]) == 0
    doc = json.loads(capsys.readouterr().out)
    failing = doc["failing_claims"]
    bad = [f for f in failing if f["span_id"] == BAD_SPAN]
    assert bad and all(f["span_url"] is None for f in bad)  # no link onto an id that is none
    good = [f for f in failing if f["span_url"]]
    assert good and all(f["span_url"].startswith("http://127.0.0.1:6006/redirects/spans/") for f in good)


def test_ids_and_escapers() -> None:
    assert is_span_id("00f067aa0ba902b7") and not is_span_id("00F067AA0BA902B7") and not is_span_id("0" * 16)
    assert is_trace_id("4bf92f3577b34da6a3ce929d0e0e4736") and not is_trace_id("4bf92f35")
    assert span_url("http://p", "javascript:alert(1)") is None and trace_url("http://p", BAD_SPAN) is None
    assert term("a\x1b[31mb\x07c\u202ed\ne") == "abcd e"
    assert md("x|y") == "x\\|y"
    assert md("see https://a.example/p") == "see `https://a.example/p`"
    assert md("``a`|b") == "\\`\\`a\\`\\|b"
    assert md("http://a.example/`x`") == "`` http://a.example/`x` ``"


@pytest.mark.integration
def test_annotate_never_writes_onto_an_id_that_is_no_span_id(store: Path, phoenix: Any) -> None:
    from citeline.analyzer.phoenix.annotate import SpansNotInPhoenix, annotate
    from citeline.analyzer.reports.report import resolve_run
    from citeline.analyzer.store import connect

    con = connect(store)
    try:
        run_id, _ = resolve_run(con, None)
        with pytest.raises(SpansNotInPhoenix) as raised:  # the store's traces were never sent to this Phoenix
            annotate(con, phoenix.url, run_id)
    finally:
        con.close()
    report = raised.value.report
    assert report.invalid_spans == [BAD_SPAN]
    assert BAD_SPAN not in report.missing_spans  # never sent: skipped before any request


def test_phoenix_explanations_hold_no_escape_or_control_character(store: Path) -> None:
    """Phoenix shows an annotation's explanation as plain text: escaped as for a terminal (escaping.term)."""
    from citeline.analyzer.phoenix.verdicts import annotation_rows
    from citeline.analyzer.reports.report import resolve_run
    from citeline.analyzer.store import connect

    con = connect(store)
    try:
        rows = annotation_rows(con, resolve_run(con, None)[0])
    finally:
        con.close()
    explanations = [r["result"]["explanation"] for r in rows]
    assert any("open me" in e for e in explanations)  # the hostile claim, its text kept ...
    for e in explanations:  # ... with no escape sequence, control or bidi character left
        assert e == term(e) and "\x1b" not in e and "\n" not in e, e
