"""Request functions for the perturbation harness, over the bundled example app.

``citeline perturb --app citeline.examples.perturb_apps:answer_case --gold examples/policy_gold.yaml``
runs every gold case through :func:`answer_case`: the policy assistant with
its right answer for each case. Two variants show what the harness tells
apart:

- :func:`careful_case`: the same app with a model that abstains when what it
  would cite is not in its context, and follows a newer version of a policy
  when the context holds one (good reactions);
- :func:`misplaced_case`: ``@context_assembly`` sits on a ranking step whose
  output a later, undecorated step trims and relabels, so the trace records
  labels the model never saw (the context stage is not seen).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from citeline.instrumentation import Chunk, context_assembly, generation

from .demo import RIGHT, _structured
from .policy_bot import _CITE, Faults, PolicyBot, Prompt, _follow_script

ABSTAIN = RIGHT["abstain"]


def script_for(case_id: str) -> Any:
    """The example app's right answer for a gold case of ``examples/policy_gold.yaml``."""
    if case_id == "warranty-water":
        return _structured("warranty-v1#exclusions-2")
    return RIGHT.get(case_id, ABSTAIN)


def _ask(bot: PolicyBot, case: Any) -> str:
    return bot.ask(
        case.question, script_for(case.case_id), case_id=case.case_id, principal=case.principal, as_of=case.as_of
    )


_plain = PolicyBot()


def answer_case(case: Any) -> str:
    """The example app answering one gold case (``case``: question, case_id, principal, as_of)."""
    return _ask(_plain, case)


def _anchor(chunk_id: str) -> str:
    return chunk_id.split("#", 1)[-1]


def _version_key(version: str) -> tuple[int, str]:
    digits = re.findall(r"\d+", version)
    return (int(digits[-1]) if digits else -1, version)


class CarefulBot(PolicyBot):
    """A model that cites only what it was shown, follows a newer version of a passage, else abstains."""

    @generation
    def answer(self, prompt: Prompt, script: Any) -> Any:
        if not isinstance(script, str):
            claims = []
            for claim in script["claims"]:
                evidence = []
                for e in claim["evidence"]:
                    newest = self._newest(e["chunk_id"], prompt.chunks)
                    if newest is None:
                        return ABSTAIN
                    evidence.append({**e, "chunk_id": newest.chunk_id})
                claims.append({**claim, "evidence": evidence})
            return {**script, "claims": claims}
        for cid in _CITE.findall(script):
            newest = self._newest(cid, prompt.chunks)
            if newest is None:
                return ABSTAIN
            if newest.chunk_id != cid:  # restate the rule as the newer version gives it
                sentence = re.compile(r"(?:^|(?<=[.!?] ))[^\[]*?\[\[" + re.escape(cid) + r"\]\]\.?")
                script = sentence.sub(f"{newest.text.rstrip('.')} [[{newest.chunk_id}]].", script, count=1)
        return _follow_script(prompt, script, set())

    def _newest(self, chunk_id: str, shown: list[Chunk]) -> Chunk | None:
        """The newest shown version of the passage ``chunk_id`` names, never an older one; None if none is shown."""
        mine = next((c for c in self.corpus if c.chunk_id == chunk_id), None)
        if mine is None:
            return None
        floor = _version_key(mine.version)
        same = [
            c
            for c in shown
            if c.doc_id == mine.doc_id and _anchor(c.chunk_id) == _anchor(chunk_id) and _version_key(c.version) >= floor
        ]
        return max(same, key=lambda c: _version_key(c.version)) if same else None


_careful = CarefulBot()


def careful_case(case: Any) -> str:
    """The example app with the careful model (abstains without support, follows newer versions)."""
    return _ask(_careful, case)


class MisplacedBot(PolicyBot):
    """``@context_assembly`` on the ranking step; the step that trims and labels is not decorated."""

    @context_assembly
    def rank(self, question: str, hits: list[Chunk], faults: Faults) -> list[Chunk]:
        return sorted(hits, key=lambda c: -(c.score or 0.0))

    def build_prompt(self, question: str, hits: list[Chunk], faults: Faults) -> Prompt:  # type: ignore[override]
        ranked = self.rank(question, hits, faults)
        kept = ranked[: faults.context_budget]
        return Prompt(question, [replace(c, label=str(i + 1)) for i, c in enumerate(kept)])


_misplaced = MisplacedBot()


def misplaced_case(case: Any) -> str:
    """The example app with its context decorator on the wrong function."""
    return _ask(_misplaced, case)
