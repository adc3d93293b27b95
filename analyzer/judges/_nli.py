"""The ``nli`` judge: a cross-encoder NLI model the user has on disk, run with onnxruntime.

Options (``--judge-option KEY=VALUE``):

- ``model``: the ``.onnx`` file, or a folder holding ``model.onnx`` and ``tokenizer.json`` (required;
  ``CITELINE_NLI_MODEL`` otherwise). Export one with ``optimum-cli export onnx --model <nli model> dir/``.
- ``tokenizer``: a ``tokenizer.json`` (default: beside the model);
- ``labels``: the model's output order, comma separated (default ``entailment,neutral,contradiction``;
  read the model's ``config.json`` ``id2label`` to be sure);
- ``entail`` (0.5) and ``contradict`` (0.5): probability thresholds; ``max_length`` (512) tokens;
  ``batch_size`` (16); ``threads`` (0: onnxruntime decides).

Evidence is split into sentences and packed into windows that fit the model's input together with the
claim; every window is scored and the best one decides: ``entailed`` when its entailment probability
reaches ``entail``, else ``contradicted`` when some window's contradiction probability reaches
``contradict``, else ``insufficient``. Needs ``pip install citeline[nli]`` (onnxruntime, tokenizers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from citeline.analyzer.judges._api import BaseJudge, JudgeItem, Judgment, as_item
from citeline.analyzer.text import sentences
from citeline.instrumentation.settings import NLI_MODEL

_ALIASES = {
    "entailment": "entailed",
    "entailed": "entailed",
    "contradiction": "contradicted",
    "contradicted": "contradicted",
    "neutral": "insufficient",
    "insufficient": "insufficient",
    "not_entailment": "insufficient",
}


class NLIJudge(BaseJudge):
    name = "nli"
    version = "1"

    def __init__(
        self,
        model: str | None = None,
        tokenizer: str | None = None,
        labels: str = "entailment,neutral,contradiction",
        entail: float | str = 0.5,
        contradict: float | str = 0.5,
        max_length: int | str = 512,
        batch_size: int | str = 16,
        threads: int | str = 0,
    ) -> None:
        try:
            import numpy as np
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ImportError(
                f"the nli judge needs onnxruntime and tokenizers: pip install 'citeline[nli]' ({exc})"
            ) from exc
        path = Path(model or NLI_MODEL.get() or "")
        if not str(path) or str(path) == ".":
            raise ValueError("the nli judge needs a model: --judge-option model=PATH (an .onnx file or its folder)")
        onnx_file = path / "model.onnx" if path.is_dir() else path
        tok_file = Path(tokenizer) if tokenizer else onnx_file.with_name("tokenizer.json")
        for what, f in (("model", onnx_file), ("tokenizer", tok_file)):
            if not f.is_file():
                raise ValueError(f"nli {what} file {f} does not exist")
        self.labels = [s.strip().lower() for s in labels.split(",") if s.strip()]
        unknown = [lb for lb in self.labels if lb not in _ALIASES]
        if unknown or "entailed" not in {_ALIASES.get(lb) for lb in self.labels}:
            raise ValueError(
                f"labels={labels!r}: name each output of the model, in order, from {', '.join(sorted(_ALIASES))}"
            )
        self.entail, self.contradict = float(entail), float(contradict)
        self.max_length, self.batch_size = int(max_length), max(1, int(batch_size))
        options = ort.SessionOptions()
        if int(threads):
            options.intra_op_num_threads = int(threads)
        self._np = np
        self._session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tok = Tokenizer.from_file(str(tok_file))
        self._tok.no_padding()
        self._tok.no_truncation()
        self._model_name = onnx_file.name if onnx_file.parent == Path(".") else str(onnx_file)
        self._pad = self._tok.token_to_id("[PAD]") or self._tok.token_to_id("<pad>") or 0

    @property
    def settings(self) -> Mapping[str, Any]:
        return {
            "model": self._model_name,
            "labels": ",".join(self.labels),
            "entail": self.entail,
            "contradict": self.contradict,
            "max_length": self.max_length,
        }

    def judge(
        self, claim: str, evidence: Sequence[str], facts: Sequence[str] = (), quotes: Sequence[str] = ()
    ) -> Judgment:
        return self.judge_many([JudgeItem(claim, list(evidence), list(facts), list(quotes))])[0]

    def _windows(self, claim: str, evidence: Sequence[str]) -> list[str]:
        """Consecutive evidence sentences packed so that each window and the claim fit the model together."""
        budget = self.max_length - len(self._tok.encode(claim, add_special_tokens=False).ids) - 4
        budget = max(budget, 16)
        windows: list[str] = []
        current: list[str] = []
        used = 0
        for text in evidence:
            for s in sentences(text):
                n = len(self._tok.encode(s, add_special_tokens=False).ids)
                pieces = [s] if n <= budget else _split_words(s, n, budget)
                for piece in pieces:
                    m = n if len(pieces) == 1 else len(self._tok.encode(piece, add_special_tokens=False).ids)
                    if current and used + m > budget:
                        windows.append(" ".join(current))
                        current, used = [], 0
                    current.append(piece)
                    used += m
        if current:
            windows.append(" ".join(current))
        return windows

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgment]:
        items = [as_item(it) for it in items]
        pairs: list[tuple[int, str, str]] = []
        for k, it in enumerate(items):
            for w in self._windows(it.claim, [e for e in it.evidence if e and e.strip()]):
                pairs.append((k, w, it.claim))
        probs = self._score([(w, c) for _, w, c in pairs])
        per_item: dict[int, list[tuple[int, dict[str, float]]]] = {}
        for (k, _, _), (i, p) in zip(pairs, enumerate(probs), strict=True):
            per_item.setdefault(k, []).append((i, p))
        out = []
        for k in range(len(items)):
            scored = per_item.get(k)
            if not scored:
                out.append(Judgment("not_applicable", "no evidence text to judge against"))
                continue
            best_n, best = max(enumerate(scored), key=lambda x: x[1][1].get("entailed", 0.0))
            if best[1].get("entailed", 0.0) >= self.entail:
                out.append(
                    Judgment(
                        "entailed", f"window {best_n + 1} of {len(scored)} entails it (p={best[1]['entailed']:.2f})"
                    )
                )
                continue
            c_n, c = max(enumerate(scored), key=lambda x: x[1][1].get("contradicted", 0.0))
            if c[1].get("contradicted", 0.0) >= self.contradict:
                out.append(
                    Judgment(
                        "contradicted",
                        f"window {c_n + 1} of {len(scored)} contradicts it (p={c[1]['contradicted']:.2f})",
                    )
                )
                continue
            out.append(
                Judgment(
                    "insufficient",
                    f"no window entails it (best p={best[1].get('entailed', 0.0):.2f} in window {best_n + 1} "
                    f"of {len(scored)})",
                )
            )
        return out

    def _score(self, pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
        np = self._np
        out: list[dict[str, float]] = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start : start + self.batch_size]
            enc = self._tok.encode_batch(batch)
            width = min(max(len(e.ids) for e in enc), self.max_length)
            ids = np.full((len(enc), width), self._pad, dtype=np.int64)
            mask = np.zeros((len(enc), width), dtype=np.int64)
            types = np.zeros((len(enc), width), dtype=np.int64)
            for r, e in enumerate(enc):
                n = min(len(e.ids), width)
                ids[r, :n], mask[r, :n], types[r, :n] = e.ids[:n], e.attention_mask[:n], e.type_ids[:n]
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            logits = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
            logits = np.asarray(logits, dtype=np.float64)
            if logits.ndim != 2 or logits.shape[1] != len(self.labels):
                raise ValueError(
                    f"the model returned logits of shape {tuple(logits.shape)}; labels= names {len(self.labels)}"
                )
            e = np.exp(logits - logits.max(axis=1, keepdims=True))
            p = e / e.sum(axis=1, keepdims=True)
            for row in p:
                scores: dict[str, float] = {}
                for lb, v in zip(self.labels, row, strict=True):
                    key = _ALIASES[lb]
                    scores[key] = scores.get(key, 0.0) + float(v)
                out.append(scores)
        return out


def _split_words(sentence: str, n_tokens: int, budget: int) -> list[str]:
    """A sentence longer than the budget, cut into word runs of about the budget each."""
    words = sentence.split()
    per = max(1, int(len(words) * budget / max(n_tokens, 1) * 0.9))
    return [" ".join(words[i : i + per]) for i in range(0, len(words), per)]
