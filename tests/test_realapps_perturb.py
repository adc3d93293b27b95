"""Issue #34's acceptance on two apps the harness was not written for (``tests/realapps``).

A LangChain help desk whose context step returns ``Prompt(messages, documents)``, and an openai-SDK
city desk with chat-message context, a JSON-answer mode and a hybrid retriever, each correctly
decorated and with a decorator deliberately misplaced. Only the models are stand-ins (no hosted LLM
runs here): the LangChain one in process, the openai one behind a strict loopback endpoint that
answers HTTP 400 to a message key a real provider would refuse. Everything else is real: the
decorators, the capture, the analyzer and its DuckDB store.

What must hold (the result contract of issue #34):

- each app alone answers every gold case ``ok`` (the baseline, through the ``citeline`` fixture);
- correct apps: every stage ``seen`` or ``n/a`` (with its reason), every cell that is not
  n/a, skipped or reaction-only ``holds``;
- a cell touching one claim of a case with several names that claim; the others keep their bucket;
- a wrapper with two views (messages + documents) is edited in both or the cell is ``n/a`` saying
  "two views"; chat messages never get keys the endpoint refuses;
- structured (JSON) answers: resolution and render cells ``n/a`` with the reason, stages ``n/a``;
- a misplaced ``@context_assembly`` leaves context ``not seen`` with the cells that prove it;
- ``@retrieval`` on one branch of a hybrid retriever: retrieval ``partly seen``, naming the chunks
  that reached the context from the undecorated branch;
- ``render.old_version`` is ``n/a`` where the gold corpus holds no other version.

One perturbation run per app variant, shared by the module (about 20 s in all).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, cast

import openai
import pytest

from citeline.analyzer.cli import main as cli
from citeline.analyzer.testing import gold_cases, perturb, render_text
from tests.realapps import city_desk, storage_desk
from tests.realapps.model_server import ModelServer

HERE = Path(__file__).parent / "realapps"
STORAGE_GOLD = HERE / "storage_gold.yaml"
CITY_GOLD = HERE / "city_gold.yaml"

STAGES = ("retrieval", "context", "generation", "resolution", "render")
APPLICABLE_ELSEWHERE = {"n/a", "skipped", "reaction"}  # statuses that judge nothing


# ------------------------------------------------------------------ the result contract asserted here


class ContractCell(Protocol):
    case_id: str
    perturbation: str
    status: str  # holds | differs | n/a | skipped | error | reaction
    note: str
    claims: list[str]  # the gold claims the perturbation touched
    rows: list[dict[str, Any]]


class ContractStage(Protocol):
    verdict: str  # seen | partly seen | not seen | n/a | unreachable
    note: str
    cells: list[ContractCell]  # the cells that did not hold
    tested: int
    unrecorded: list[str]  # chunk ids in the context whose origin no retrieval span recorded


class ContractResult(Protocol):
    cases: list[str]
    cells: list[ContractCell]
    stages: dict[str, ContractStage]

    def cell(self, case_id: str, perturbation: str) -> ContractCell: ...


def run(app: Any, gold: Path) -> ContractResult:
    return cast(ContractResult, perturb(app, gold))


#: per city-desk variant, the requests the strict endpoint refused during its perturbation run
REFUSED: dict[str, list[list[str]]] = {}


def run_city(model: ModelServer, variant: str, app: Any) -> ContractResult:
    before = len(model.rejected)
    result = run(app, CITY_GOLD)
    REFUSED[variant] = model.rejected[before:]
    return result


def show(r: ContractResult) -> str:
    return render_text(cast(Any, r))


def bad_cells(r: ContractResult) -> list[str]:
    """Cells that judged something and did not hold."""
    return [
        f"{c.case_id} x {c.perturbation}: {c.status} ({c.note})"
        for c in r.cells
        if c.status not in APPLICABLE_ELSEWHERE and c.status != "holds"
    ]


def assert_correct(r: ContractResult) -> None:
    """A correctly decorated app: every stage seen or n/a with its reason, every applicable cell holds."""
    verdicts = {s: v.verdict for s, v in r.stages.items()}
    assert set(verdicts) == set(STAGES), show(r)
    assert set(verdicts.values()) <= {"seen", "n/a"}, show(r)
    assert [s for s, v in r.stages.items() if v.verdict == "n/a" and not v.note] == [], "n/a without a reason"
    assert [s for s, v in r.stages.items() if v.verdict == "seen" and v.tested == 0] == []
    assert bad_cells(r) == [], show(r)


def assert_touches_one_claim(r: ContractResult, case_id: str, perturbation: str, of: set[str]) -> str:
    """The cell holds, touched exactly one claim of ``of``, and every other claim kept its baseline ``ok``."""
    c = r.cell(case_id, perturbation)
    assert c.status == "holds", (c.status, c.note)
    assert len(c.claims) == 1 and set(c.claims) <= of, c.claims
    others = {row["gold_claim_id"]: row["bucket"] for row in c.rows if row["gold_claim_id"] not in c.claims}
    assert others == dict.fromkeys(of - set(c.claims), "ok"), c.rows
    return c.claims[0]


# ------------------------------------------------------------------ shared servers and runs


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def storage() -> ContractResult:
    return run(storage_desk.answer_case, STORAGE_GOLD)


@pytest.fixture(scope="module")
def storage_misplaced() -> ContractResult:
    return run(storage_desk.misplaced_case, STORAGE_GOLD)


@pytest.fixture(scope="module")
def city(model: ModelServer) -> ContractResult:
    return run_city(model, "prose", city_desk.CityDesk(model.url).answer_case)


@pytest.fixture(scope="module")
def city_json(model: ModelServer) -> ContractResult:
    return run_city(model, "json", city_desk.CityDesk(model.url, json_mode=True).answer_case)


@pytest.fixture(scope="module")
def city_partial(model: ModelServer) -> ContractResult:
    return run_city(model, "partial", city_desk.PartialCityDesk(model.url).answer_case)


@pytest.fixture(scope="module")
def city_misplaced(model: ModelServer) -> ContractResult:
    return run_city(model, "misplaced", city_desk.MisplacedCityDesk(model.url).answer_case)


# ------------------------------------------------------------------ each app alone (holds on main)


@pytest.mark.parametrize("app", [storage_desk.answer_case, storage_desk.misplaced_case], ids=["correct", "misplaced"])
def test_the_langchain_desk_answers_every_gold_case_ok(citeline: Any, app: Any) -> None:
    for case in gold_cases(STORAGE_GOLD):
        app(case)
    result = citeline.analyze(gold=STORAGE_GOLD)
    citeline.assert_ok(result)
    assert {b: n for b, n in result.summary.items() if n} == {"ok": 9}  # 7 gold claims over 5 cases, 2 abstentions


@pytest.mark.parametrize(
    ("desk", "json_mode"),
    [(city_desk.CityDesk, False), (city_desk.CityDesk, True), (city_desk.MisplacedCityDesk, False)],
    ids=["prose", "json", "misplaced"],
)
def test_the_openai_desk_answers_every_gold_case_ok(
    citeline: Any, model: ModelServer, desk: type[city_desk.CityDesk], json_mode: bool
) -> None:
    app = desk(model.url, json_mode=json_mode)
    before = len(model.rejected)
    for case in gold_cases(CITY_GOLD):
        app.answer_case(case)
    result = citeline.analyze(gold=CITY_GOLD)
    citeline.assert_ok(result)
    assert {b: n for b, n in result.summary.items() if n} == {"ok": 7}  # 6 gold claims over 5 cases, 1 abstention
    assert model.rejected[before:] == []


def test_the_partly_decorated_desk_misses_what_only_the_keyword_branch_found(citeline: Any, model: ModelServer) -> None:
    app = city_desk.PartialCityDesk(model.url)
    for case in gold_cases(CITY_GOLD):
        app.answer_case(case)
    citeline.assert_buckets({"deck-permit": "retrieval_miss"}, citeline.analyze(gold=CITY_GOLD))


def test_the_loopback_endpoint_refuses_a_message_key_a_provider_would_refuse(model: ModelServer) -> None:
    client = openai.OpenAI(base_url=model.url, api_key="not-a-key", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="unknown key 'label'"):
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Hello?", "label": "11"}],  # type: ignore[misc, list-item]
        )
    assert model.rejected[-1] == ["messages[0]: unknown key 'label'"]


# ------------------------------------------------------------------ LangChain: a Prompt(messages, documents) wrapper


def test_the_langchain_desk_is_seen_at_every_stage_it_can_be(storage: ContractResult) -> None:
    assert_correct(storage)


def test_the_two_views_of_the_prompt_are_edited_together_or_not_at_all(storage: ContractResult) -> None:
    context = [c for c in storage.cells if c.perturbation.startswith("context.")]
    assert [(c.case_id, c.perturbation, c.status) for c in context if c.status not in {"holds", "n/a", "skipped"}] == []
    verdict = storage.stages["context"]
    assert verdict.verdict in {"seen", "n/a"}, show(storage)
    if verdict.verdict == "n/a":
        assert "two views" in verdict.note
    text = {a["chunk_id"]: a["text"] for a in storage_desk.ARTICLES}
    support = {  # the cases that answer, and their support
        "team-plan": ["plans-v3#team-storage", "pricing-v3#team-price"],
        "trash-retention": ["trash-v2#retention"],
        "enterprise-sla": ["sla-v1#uptime", "sla-v1#credits"],
        "link-expiry": ["sharing-v1#links"],
        "key-rotation": ["keys-v1#rotation"],
    }
    for case_id, chunk_ids in support.items():
        texts = [text[cid] for cid in chunk_ids]
        for name in ("context.drop_support", "context.truncate"):
            c = storage.cell(case_id, name)
            assert c.status == "holds" or (c.status == "n/a" and "two views" in c.note), (case_id, name, c.note)
            if c.status == "holds":  # the model really lost the support: no claim restates it
                said = [(r["claim_text"] or "").rstrip(".") for r in c.rows]
                assert [t for t in texts if t.rstrip(".") in said] == [], (case_id, name, said)


def test_a_perturbation_of_one_claim_is_judged_on_that_claim(storage: ContractResult) -> None:
    both = {"storage", "price"}
    assert assert_touches_one_claim(storage, "team-plan", "retrieval.archived_version", both) == "storage"
    assert_touches_one_claim(storage, "team-plan", "generation.change_number", both)
    assert_touches_one_claim(storage, "team-plan", "generation.neighbour_label", both)
    sla = {"uptime", "credit"}
    assert_touches_one_claim(storage, "enterprise-sla", "generation.change_number", sla)
    assert_touches_one_claim(storage, "enterprise-sla", "generation.neighbour_label", sla)
    one = storage.cell("trash-retention", "retrieval.archived_version")
    assert (one.status, one.claims) == ("holds", ["days"])
    # what takes away every claim's support or marker touches every claim, and the flag holds on each
    for case_id, claims in (("team-plan", both), ("enterprise-sla", sla)):
        for name in ("retrieval.drop_support", "generation.remove_marker"):
            c = storage.cell(case_id, name)
            assert (c.status, sorted(c.claims)) == ("holds", sorted(claims)), (case_id, name, c.note)


def test_no_old_version_link_is_invented_for_a_document_with_one_version(storage: ContractResult) -> None:
    for case_id in ("enterprise-sla", "link-expiry", "key-rotation"):  # sla, sharing, keys: v1 only in the gold
        c = storage.cell(case_id, "render.old_version")
        assert (c.status, bool(c.note)) == ("n/a", True), (case_id, c.status, c.note)
    for case_id in ("team-plan", "trash-retention"):  # plans v2 and trash v1 are in the archive
        assert storage.cell(case_id, "render.old_version").status == "holds"


def test_the_restricted_and_the_abstaining_cases_judge_nothing_they_cannot(storage: ContractResult) -> None:
    for case_id in ("key-rotation-customer", "on-premises"):
        statuses = {c.perturbation: c.status for c in storage.cells if c.case_id == case_id}
        assert set(statuses.values()) <= {"n/a", "holds", "skipped"}, statuses
        assert statuses["retrieval.drop_support"] == "n/a"  # no support to drop
    assert storage.cell("key-rotation", "retrieval.drop_support").status == "holds"


def test_a_context_decorator_on_the_reranker_leaves_context_not_seen(storage_misplaced: ContractResult) -> None:
    r = storage_misplaced
    context = r.stages["context"]
    assert context.verdict == "not seen", show(r)
    proof = {(c.case_id, c.perturbation): c.status for c in context.cells}
    # the trace records labels 11, 12, ... on the reranker's output; the prompt numbers its own 1, 2, 3
    assert {("team-plan", "context.shuffle_relabel"), ("trash-retention", "context.shuffle_relabel")} <= set(proof)
    assert {p for _, p in proof} == {"context.shuffle_relabel"} and set(proof.values()) == {"differs"}
    assert [s for s, v in r.stages.items() if s != "context" and v.verdict not in {"seen", "n/a"}] == [], show(r)


def test_the_command_line_agrees_with_the_library(storage: ContractResult, tmp_path: Path) -> None:
    out = tmp_path / "matrix.json"
    argv = ["perturb", "--app", "tests.realapps.storage_desk:answer_case", "--gold", str(STORAGE_GOLD)]
    assert cli.main([*argv, "--format", "json", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert {s: v["verdict"] for s, v in data["stages"].items()} == {s: v.verdict for s, v in storage.stages.items()}
    assert {(c["case_id"], c["perturbation"]): c["status"] for c in data["cells"]} == {
        (c.case_id, c.perturbation): c.status for c in storage.cells
    }


# ------------------------------------------------------------------ openai SDK: chat messages, JSON, hybrid


def test_the_openai_desk_is_seen_at_every_stage_it_can_be(city: ContractResult) -> None:
    assert_correct(city)
    assert city.stages["retrieval"].verdict == "seen"
    assert city.stages["retrieval"].unrecorded == []
    assert REFUSED["prose"] == []  # no message ever carried a key the endpoint refuses


def test_chat_message_context_is_edited_as_messages_or_says_it_is_a_prompt(city: ContractResult) -> None:
    context = [c for c in city.cells if c.perturbation.startswith("context.")]
    assert [c for c in context if c.status == "error"] == [], [c.note for c in context if c.status == "error"]
    assert [(c.case_id, c.perturbation) for c in context if c.status not in {"holds", "n/a", "skipped"}] == []
    for c in context:
        if c.status == "n/a" and c.perturbation != "context.shuffle_relabel" and c.case_id != "park-wifi":
            assert "prompt" in c.note, (c.case_id, c.perturbation, c.note)
    assert REFUSED["prose"] == []


def test_one_claim_of_two_is_judged_on_the_openai_desk(city: ContractResult) -> None:
    both = {"fee", "passes"}
    assert assert_touches_one_claim(city, "parking-permit", "retrieval.archived_version", both) == "fee"
    assert_touches_one_claim(city, "parking-permit", "generation.change_number", both)
    assert_touches_one_claim(city, "parking-permit", "generation.neighbour_label", both)
    for name in ("retrieval.drop_support", "generation.remove_marker"):
        c = city.cell("parking-permit", name)
        assert (c.status, sorted(c.claims)) == ("holds", sorted(both)), (name, c.note)
    for case_id in ("bulk-pickup", "library-fines", "deck-permit", "plow-overtime"):  # one version each
        assert city.cell(case_id, "render.old_version").status == "n/a"


def test_json_answers_leave_resolution_and_render_not_applicable(city_json: ContractResult) -> None:
    assert_correct(city_json)
    assert REFUSED["json"] == []
    for stage in ("resolution", "render"):
        verdict = city_json.stages[stage]
        assert (verdict.verdict, bool(verdict.note), verdict.cells) == ("n/a", True, []), show(city_json)
        cells = [c for c in city_json.cells if c.perturbation.startswith(f"{stage}.")]
        assert cells and {c.status for c in cells} == {"n/a"}
        assert [c.case_id for c in cells if not c.note] == []
    assert city_json.stages["generation"].verdict == "seen"
    for case_id in ("parking-permit", "bulk-pickup", "library-fines", "deck-permit", "plow-overtime"):
        assert city_json.cell(case_id, "generation.remove_marker").status == "holds"  # the evidence removed
    both = {"fee", "passes"}  # a structured answer's evidence moved for one claim: that claim alone
    assert assert_touches_one_claim(city_json, "parking-permit", "retrieval.archived_version", both) == "fee"
    assert_touches_one_claim(city_json, "parking-permit", "generation.change_number", both)
    assert_touches_one_claim(city_json, "parking-permit", "generation.neighbour_label", both)


def test_a_hybrid_retriever_with_one_branch_decorated_is_partly_seen(city_partial: ContractResult) -> None:
    retrieval = city_partial.stages["retrieval"]
    assert retrieval.verdict == "partly seen", show(city_partial)
    assert retrieval.note
    # the pages only the keyword index holds reach the model with no span recording where they came from;
    # a perturbed run may add a page the harness took out of the vector branch's return value (the keyword
    # branch still found it), never a page the keyword branch cannot return
    baseline, reach = keyword_only_in_context()
    assert baseline == ["permits-v2#deck", "permits-v2#fence"]
    assert set(baseline) <= set(retrieval.unrecorded) <= set(reach), retrieval.unrecorded
    assert len(retrieval.unrecorded) == len(set(retrieval.unrecorded))
    assert [s for s, v in city_partial.stages.items() if v.verdict == "not seen"] == [], show(city_partial)
    assert REFUSED["partial"] == []


def test_a_context_decorator_on_the_source_picker_leaves_context_not_seen(city_misplaced: ContractResult) -> None:
    r = city_misplaced
    context = r.stages["context"]
    assert context.verdict == "not seen", show(r)
    assert {(c.case_id, c.perturbation, c.status) for c in context.cells} == {
        (case_id, "context.shuffle_relabel", "differs")
        for case_id in ("parking-permit", "bulk-pickup", "library-fines", "deck-permit", "plow-overtime")
    }
    assert [s for s, v in r.stages.items() if s != "context" and v.verdict not in {"seen", "n/a"}] == [], show(r)
    assert REFUSED["misplaced"] == []


def keyword_only_in_context() -> tuple[list[str], list[str]]:
    """Over the gold cases: the pages the city desk shows the model that its vector branch did not return,
    and every page its keyword branch returns."""
    shown_only: set[str] = set()
    reach: set[str] = set()
    for case in gold_cases(CITY_GOLD):
        groups = tuple(case.principal.get("groups", []))
        lexical = city_desk.LEXICAL.search(case.question, city_desk.BRANCH_K, groups)
        vector = city_desk.VECTORS.search(case.question, city_desk.BRANCH_K, groups)
        shown = city_desk.fuse(lexical, vector)[: city_desk.SHOWN]
        shown_only |= {h["chunk_id"] for h in shown} - {h["chunk_id"] for h in vector}
        reach |= {h["chunk_id"] for h in lexical}
    return sorted(shown_only), sorted(reach)
