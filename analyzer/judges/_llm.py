"""The ``llm`` judge: any OpenAI-compatible chat-completions endpoint (a hosted model, vLLM, Ollama, llama.cpp).

Options (``--judge-option KEY=VALUE``), each with its environment variable:

- ``model`` (``CITELINE_JUDGE_MODEL``, then ``OPENAI_MODEL``): required;
- ``base_url`` (``OPENAI_BASE_URL``, default ``https://api.openai.com/v1``), ``api_key`` (``OPENAI_API_KEY``);
- ``concurrency`` (4), ``retries`` (2), ``timeout`` seconds (60), ``backoff`` seconds (1.0, doubled each retry);
- ``temperature`` (0), ``max_tokens`` (300);
- ``price_in`` / ``price_out``: USD per million prompt / completion tokens, for the cost in the run summary;
- ``prompt``: the prompt version (``PROMPT_VERSION``, 3; 2 and 1 are the prompts it replaced, kept for comparison).

The prompt is versioned (part of the judge's version and so of the cache key, with the question and the
sources it shows). Prompt 2 gives the question, the claim, each evidence text with its document metadata
(document, chunk, version, title, effective dates, status), the four-label rubric, and says to judge from
the evidence only, not from what the model knows. The
model answers a JSON object ``{"label": ..., "rationale": ...}``; a reply that is not one is asked again
once, then the claim is ``not_applicable`` with the reply quoted. HTTP errors 429 and 5xx, timeouts and
refused connections are retried with backoff; a request that still fails is ``not_applicable`` with the
reason. No dependency beyond the standard library.

Prompt 3 (issue #36) is prompt 2 asking for the structure rules v4 reads: the reply also holds
``bindings`` (each value of the claim with the subject the evidence binds it to), ``unsupported`` (the
part of the claim the evidence does not support, "" when none) and ``period`` (the time the evidence's
statement covers, "" when it names none); the judge writes them into the rationale after the model's
sentence, so a model's reasons read as rules v4's do.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from citeline.analyzer.judges._api import LABELS, BaseJudge, JudgeItem, Judgment, Source, as_item, failed
from citeline.instrumentation.redact import redact_text, redact_url
from citeline.instrumentation.settings import JUDGE_MODEL, OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL

log = logging.getLogger("citeline.judges.llm")

PROMPT_VERSION = "3"
_SYSTEM_1 = (
    "You check citations. Given a claim and the evidence it cites, decide whether the evidence supports the "
    "claim. Answer with one JSON object and nothing else: "
    '{"label": "<entailed|contradicted|insufficient>", "rationale": "<one sentence>"}. '
    "entailed: every part of the claim, including each name, number, date and amount, is stated by or "
    "follows directly from the evidence. contradicted: the evidence states something incompatible with "
    "the claim (another value, another name, the opposite). insufficient: the evidence does not say enough "
    "either way. Judge only from the evidence, not from what you know."
)
_SYSTEM_2 = (
    "You check the citations of a RAG answer. You are given the question the answer was given to, one claim "
    "from the answer, and the evidence the claim cites: numbered texts, each with its document metadata. "
    "Decide whether the evidence supports the claim, using the evidence texts only: do not use outside "
    "knowledge or what you believe to be true, and do not judge whether the claim is plausible. The question "
    "says what the claim is about; it is not evidence. The metadata says which document, version and "
    "effective dates each text comes from; use it only where the claim itself names a document, version or "
    "date. Answer with one JSON object and nothing else: "
    '{"label": "<entailed|contradicted|insufficient|not_applicable>", "rationale": "<one sentence>"}. '
    "entailed: the evidence states or directly implies every part of the claim, including each name, number, "
    "date, amount, unit, comparison (under, over, at least, before), direction (rose, fell), window (per day, "
    "per user), quantifier (all, every, always) and scope (region, plan, product). "
    "contradicted: the evidence states something incompatible with a material part of the claim (another "
    "value, another name, the opposite). "
    "insufficient: the evidence is related but does not establish the claim, or supports only part of it. "
    "not_applicable: the claim states nothing that needs evidence (a greeting, a transition, an opinion). "
    "The rationale must rest on the evidence alone: name the evidence text [n] it relies on, or say what "
    "the evidence lacks."
)
_SYSTEM_3 = (
    _SYSTEM_2.replace(
        "Answer with one JSON object and nothing else: "
        '{"label": "<entailed|contradicted|insufficient|not_applicable>", "rationale": "<one sentence>"}. ',
        "",
    )
    + " Read the claim's structure before deciding. Bindings: each number, amount, date, percentage or named "
    'value of the claim belongs to a subject ("the international transfer fee is 150"); find the subject the '
    'evidence binds that value to: a value the evidence gives to another subject ("domestic fee is 150; '
    'international fee is 500") is contradicted, even though every word and number occurs in it. Parts: a '
    "sentence joined by and, but, while or a semicolon is judged part by part; if the evidence supports one "
    "part and not another, the label is insufficient and the unsupported part is named. Time: a claim "
    "qualified by before, after, since, until, as of, from or in a date is compared with the period the "
    "evidence covers; a claim about the period before the one the evidence starts at (or after the one it "
    "ends at) is contradicted, one reaching outside it insufficient. "
    "Answer with one JSON object and nothing else: "
    '{"label": "<entailed|contradicted|insufficient|not_applicable>", "rationale": "<one sentence>", '
    '"bindings": [{"value": "<as the claim writes it>", "claim_subject": "<what the claim binds it to>", '
    '"evidence_subject": "<what the evidence binds it to, or empty>"}], '
    '"unsupported": "<the part of the claim the evidence does not support, or empty>", '
    '"period": "<the period the evidence covers, as it writes it, or empty>"}.'
)
# asked after a reply with no verdict, whatever the prompt version (prompt 1 asked for three of the labels)
_RETRY = (
    "Your reply was not a JSON object with a label of entailed, contradicted, insufficient or not_applicable. "
    "Reply again."
)
_JSON = re.compile(r"\{.*\}", re.DOTALL)


class JudgeRequestError(RuntimeError):
    pass


#: what a failed request says in a claim's reason: the status and a fixed sentence, never the
#: endpoint's body (a gateway may echo the request's headers, key included, into it)
_STATUS = {
    400: "the endpoint rejected the request (check the model name and max_tokens)",
    401: "the endpoint refused the credentials (check OPENAI_API_KEY or --judge-option api_key)",
    403: "the endpoint refused access for these credentials",
    404: "no such endpoint or model (check base_url and model)",
    413: "the request was too large for the endpoint",
    422: "the endpoint could not process the request",
}


def _user_1(item: JudgeItem) -> str:
    parts = [f"Claim: {item.claim}", "Evidence:"]
    parts += [f"[{i}] {text}" for i, text in enumerate(item.evidence, start=1)]
    if item.facts:
        parts.append("The claim must state these facts: " + "; ".join(item.facts))
    if item.quotes:
        parts.append("The claim quotes these words from the evidence: " + "; ".join(repr(q) for q in item.quotes))
    return "\n".join(parts)


def _metadata(source: Source | None) -> str:
    """One evidence text's document metadata, as prompt 2 shows it ("not recorded" where the gold set is silent)."""
    s = source or Source()
    dates = ""
    if s.effective_from or s.effective_to:
        dates = f"{s.effective_from or 'any date'} to {s.effective_to or 'open'}"
    fields = (
        ("document", s.doc),
        ("chunk", s.chunk),
        ("version", s.version),
        ("title", s.title),
        ("effective", dates),
        ("status", s.status),
    )
    return "; ".join(f"{k}: {v or 'not recorded'}" for k, v in fields)


def _user_2(item: JudgeItem) -> str:
    """The question, the claim, then each evidence text under its metadata line; facts and quotes as in prompt 1."""
    parts = [f"Question: {item.question or '(not recorded)'}", f"Claim: {item.claim}", "Evidence:"]
    sources = list(item.sources)
    for i, text in enumerate(item.evidence, start=1):
        parts.append(f"[{i}] ({_metadata(sources[i - 1] if i <= len(sources) else None)})")
        parts.append(text)
    if item.facts:
        parts.append("The claim must state these facts: " + "; ".join(item.facts))
    if item.quotes:
        parts.append("The claim quotes these words from the evidence: " + "; ".join(repr(q) for q in item.quotes))
    return "\n".join(parts)


#: prompt version -> (system message, user message)
PROMPTS = {"1": (_SYSTEM_1, _user_1), "2": (_SYSTEM_2, _user_2), "3": (_SYSTEM_3, _user_2)}


def parse_reply(text: str) -> Judgment | None:
    """The label and rationale in a model's reply, or None when it holds no usable JSON object."""
    m = _JSON.search(text or "")
    if not m:
        return None
    try:
        obj = json.loads(m.group(0))
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    label = str(obj.get("label", "")).strip().lower()
    if label not in LABELS:
        return None
    rationale = str(obj.get("rationale") or "").strip() or "(no rationale given)"
    return Judgment(label, rationale + _structure(obj))


def _structure(obj: dict[str, Any]) -> str:
    """Prompt 3's fields as sentences after the rationale: a binding whose two subjects differ, the
    unsupported part, the period. A field missing or of the wrong shape says nothing (prompts 1 and 2 never
    ask for them)."""
    out = []
    raw = obj.get("bindings")
    for b in raw if isinstance(raw, list) else []:
        if not isinstance(b, dict):
            continue
        value, mine, theirs = (str(b.get(k) or "").strip() for k in ("value", "claim_subject", "evidence_subject"))
        if value and mine and theirs and mine.casefold() != theirs.casefold():
            out.append(f"the claim binds {value} to {mine!r}, the evidence to {theirs!r}")
    unsupported = obj.get("unsupported")
    if isinstance(unsupported, str) and unsupported.strip():
        out.append(f"unsupported part: {unsupported.strip()!r}")
    period = obj.get("period")
    if isinstance(period, str) and period.strip():
        out.append(f"the evidence covers {period.strip()!r}")
    return "".join(f"; {x}" for x in out)


class LLMJudge(BaseJudge):
    name = "llm"
    reads_context = True  # prompt 2 shows the question and each text's source: they are in the cache key

    # each keyword is one --judge-option: load() reads this signature to check and list them (docs/judges.md)
    def __init__(  # noqa: PLR0913
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int | str = 4,
        retries: int | str = 2,
        timeout: float | str = 60.0,
        backoff: float | str = 1.0,
        temperature: float | str = 0.0,
        max_tokens: int | str = 300,
        price_in: float | str = 0.0,
        price_out: float | str = 0.0,
        prompt: int | str = PROMPT_VERSION,
    ) -> None:
        self.prompt = str(prompt).strip()
        if self.prompt not in PROMPTS:
            raise ValueError(f"the llm judge has prompt versions {', '.join(PROMPTS)}, not {prompt!r}")
        self.model = model or JUDGE_MODEL.get() or OPENAI_MODEL.get() or ""
        if not self.model:
            raise ValueError("the llm judge needs a model: --judge-option model=NAME (or CITELINE_JUDGE_MODEL)")
        base = base_url or OPENAI_BASE_URL.get()
        self.url = base.rstrip("/") + ("" if base.rstrip("/").endswith("/chat/completions") else "/chat/completions")
        self.api_key = api_key if api_key is not None else OPENAI_API_KEY.get() or ""
        self.concurrency = max(1, int(concurrency))
        self.retries = max(0, int(retries))
        self.timeout = float(timeout)
        self.backoff = float(backoff)
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.price_in, self.price_out = float(price_in), float(price_out)
        self.version = self.prompt
        self._lock = threading.Lock()
        self._usage = {"requests": 0, "retries": 0, "prompt_tokens": 0, "completion_tokens": 0}

    @property
    def settings(self) -> Mapping[str, Any]:
        return {"model": self.model, "prompt": self.prompt, "temperature": self.temperature}

    def usage(self) -> dict[str, float]:
        with self._lock:
            u: dict[str, float] = dict(self._usage)
        u["cost_usd"] = round((u["prompt_tokens"] * self.price_in + u["completion_tokens"] * self.price_out) / 1e6, 6)
        return u

    def judge(
        self,
        claim: str,
        evidence: Sequence[str],
        facts: Sequence[str] = (),
        quotes: Sequence[str] = (),
        *,
        question: str = "",
        sources: Sequence[Source] = (),
    ) -> Judgment:
        item = JudgeItem(claim, list(evidence), list(facts), list(quotes), question=question, sources=sources)
        if not [e for e in item.evidence if e and e.strip()]:
            return Judgment("not_applicable", "no evidence text to judge against")
        system, user = PROMPTS[self.prompt]
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user(item)}]
        try:
            reply = self._ask(messages)
            verdict = parse_reply(reply)
            if verdict is None:  # re-asked once, with the reply it gave
                messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": _RETRY}]
                again = self._ask(messages)
                verdict = parse_reply(again)
                if verdict is None:
                    quoted = redact_text(again[:200], [self.api_key])
                    return failed(self, f"the model's reply is not a verdict, twice: {quoted!r}")
            return Judgment(verdict.label, redact_text(verdict.rationale, [self.api_key]))
        except JudgeRequestError as exc:
            return failed(self, str(exc))

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgment]:
        items = [as_item(it) for it in items]
        if len(items) <= 1 or self.concurrency == 1:
            return [self.judge(*it, question=it.question, sources=it.sources) for it in items]
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="citeline-llm") as pool:
            return list(pool.map(lambda it: self.judge(*it, question=it.question, sources=it.sources), items))

    def _ask(self, messages: list[dict[str, str]]) -> str:
        body = json.dumps(
            {
                "model": self.model,
                "messages": messages,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
        ).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                with self._lock:
                    self._usage["retries"] += 1
                time.sleep(self.backoff * 2 ** (attempt - 1))
            with self._lock:
                self._usage["requests"] += 1
            try:
                req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    payload = json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code} from {redact_url(self.url)}"
                self._log_body(exc)
                if exc.code == 429 or exc.code >= 500:
                    continue
                why = _STATUS.get(exc.code, "the endpoint did not accept the request")
                raise JudgeRequestError(f"{last}: {why}") from None
            except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                shown = "timed out" if isinstance(reason, TimeoutError) else redact_text(str(reason), [self.api_key])
                last = f"{shown} ({redact_url(self.url)})"
                continue
            except ValueError as exc:
                raise JudgeRequestError(f"the endpoint's answer is not JSON ({exc})") from exc
            return self._content(payload)
        raise JudgeRequestError(f"no answer after {self.retries + 1} tries: {last}")

    def _log_body(self, exc: urllib.error.HTTPError) -> None:
        """The error body, for whoever debugs the endpoint: at DEBUG only, and redacted."""
        try:
            body = exc.read()[:2000].decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - a body we cannot read is no body
            body = ""
        finally:
            exc.close()
        if log.isEnabledFor(logging.DEBUG):
            log.debug("HTTP %s from %s: %s", exc.code, redact_url(self.url), redact_text(body, [self.api_key]))

    def _content(self, payload: Any) -> str:
        try:
            usage = payload.get("usage") or {}
            with self._lock:
                self._usage["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
                self._usage["completion_tokens"] += int(usage.get("completion_tokens") or 0)
            return str(payload["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise JudgeRequestError(f"the endpoint's answer has no choices[0].message.content ({exc!r})") from exc
