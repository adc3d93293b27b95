"""A decorated function behaves exactly like the undecorated one, and its span ends and nests right.

The property tests drive the same script of operations (next/send/throw/close,
abandonment) into a plain generator and into the decorated one, and compare
everything observable: each value or exception, the return value, and what
the user's generator itself saw.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.instrumentation import generation, request, retrieval
from tests.conftest import Tracing, attr_strs, make_tracing

Log = list[tuple[Any, ...]]


def sync_body(log: Log, n: int) -> Any:
    try:
        for i in range(n):
            try:
                got = yield f"item-{i}"
                log.append(("got", got))
            except ValueError as exc:
                log.append(("caught", str(exc)))
                try:
                    got = yield f"recovered-{i}"
                except ValueError as again:
                    log.append(("caught-again", str(again)))
                    got = yield f"recovered-again-{i}"  # a third throw in a row is not caught
                log.append(("got", got))
            except GeneratorExit:
                log.append(("exit", i))
                raise
        return f"done-{n}"
    finally:
        log.append(("finally",))


async def async_body(log: Log, n: int) -> Any:
    try:
        for i in range(n):
            await asyncio.sleep(0)
            try:
                got = yield f"item-{i}"
                log.append(("got", got))
            except ValueError as exc:
                log.append(("caught", str(exc)))
                try:
                    got = yield f"recovered-{i}"
                except ValueError as again:
                    log.append(("caught-again", str(again)))
                    got = yield f"recovered-again-{i}"
                log.append(("got", got))
            except GeneratorExit:
                log.append(("exit", i))
                raise
    finally:
        log.append(("finally",))


OPS = st.lists(
    st.one_of(
        st.just(("next",)),
        st.tuples(st.just("send"), st.integers(0, 9)),
        st.tuples(st.just("throw"), st.sampled_from(["ValueError", "KeyError"])),
        st.just(("close",)),
    ),
    max_size=12,
)
ERRORS: dict[str, type[Exception]] = {"ValueError": ValueError, "KeyError": KeyError}


def _outcome(fn: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("value", fn())
    except StopIteration as stop:
        return ("stop", stop.value)
    except StopAsyncIteration:
        return ("stop-async",)
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        return ("raised", type(exc).__name__, str(exc))


def run_sync(make: Callable[[Log, int], Any], n: int, ops: list[tuple[Any, ...]], abandon: bool) -> tuple[Any, ...]:
    log: Log = []
    gen = make(log, n)
    seen = []
    for op in ops:
        if op[0] == "next":
            seen.append(_outcome(lambda: next(gen)))
        elif op[0] == "send":
            seen.append(_outcome(partial(gen.send, op[1])))
        elif op[0] == "throw":
            seen.append(_outcome(partial(gen.throw, ERRORS[op[1]](f"thrown-{len(seen)}"))))
        else:
            seen.append(_outcome(gen.close))
    if abandon:
        del gen
        gc.collect()
    return tuple(seen), tuple(log)


def run_async(make: Callable[[Log, int], Any], n: int, ops: list[tuple[Any, ...]], abandon: bool) -> tuple[Any, ...]:
    log: Log = []
    seen: list[tuple[Any, ...]] = []

    async def drive() -> None:
        agen = make(log, n)
        for op in ops:
            try:
                if op[0] == "next":
                    seen.append(("value", await agen.__anext__()))
                elif op[0] == "send":
                    seen.append(("value", await agen.asend(op[1])))
                elif op[0] == "throw":
                    seen.append(("value", await agen.athrow(ERRORS[op[1]](f"thrown-{len(seen)}"))))
                else:
                    seen.append(("value", await agen.aclose()))
            except StopAsyncIteration:
                seen.append(("stop-async",))
            except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
                seen.append(("raised", type(exc).__name__, str(exc)))
        if not abandon:
            await agen.aclose()

    asyncio.run(drive())  # an abandoned generator is closed by the loop's shutdown
    return tuple(seen), tuple(log)


DECORATORS: dict[str, Callable[[Any], Any]] = {"generation": generation, "request": request}


@pytest.fixture(autouse=True, scope="module")
def _frozen_heap() -> Any:
    """gc.collect() after an abandoned generator walks every object alive; in a full suite that is
    every module the earlier tests imported (minutes over 400 examples). Freeze what exists now: the
    collections still reach every object these tests make."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.mark.parametrize("decorator", sorted(DECORATORS))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 4), ops=OPS, abandon=st.booleans())
def test_decorated_generator_behaves_like_the_plain_one(
    tracing: Tracing, decorator: str, n: int, ops: list[tuple[Any, ...]], abandon: bool
) -> None:
    plain = run_sync(sync_body, n, ops, abandon)
    decorated = run_sync(DECORATORS[decorator](sync_body), n, ops, abandon)
    assert decorated == plain
    tracing.memory.clear()


@pytest.mark.parametrize("decorator", sorted(DECORATORS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 4), ops=OPS, abandon=st.booleans())
def test_decorated_async_generator_behaves_like_the_plain_one(
    tracing: Tracing, decorator: str, n: int, ops: list[tuple[Any, ...]], abandon: bool
) -> None:
    plain = run_async(async_body, n, ops, abandon)
    decorated = run_async(DECORATORS[decorator](async_body), n, ops, abandon)
    assert decorated == plain
    # every span the run opened has ended
    started = len(tracing.memory.get_finished_spans())
    assert started <= 1
    tracing.memory.clear()


class Boom(Exception):
    pass


def _fns() -> dict[str, tuple[Callable[..., Any], Callable[..., Any]]]:
    def ret(x: int) -> str:
        return f"answer {x * 2}"

    def boom(x: int) -> int:
        raise Boom(f"boom {x}")

    async def aret(x: int) -> str:
        await asyncio.sleep(0)
        return f"answer {x * 2}"

    async def aboom(x: int) -> int:
        await asyncio.sleep(0)
        raise Boom(f"boom {x}")

    return {
        "sync-return": (ret, ret),
        "sync-raise": (boom, boom),
        "async-return": (aret, aret),
        "async-raise": (aboom, aboom),
    }


@pytest.mark.parametrize("case", sorted(_fns()))
@pytest.mark.parametrize("decorator", ["retrieval", "generation", "request"])
def test_decorated_function_returns_and_raises_like_the_plain_one(tracing: Tracing, case: str, decorator: str) -> None:
    plain, same = _fns()[case]
    wrapped = {"retrieval": retrieval(to_chunks=lambda _r: []), "generation": generation, "request": request}[
        decorator
    ](same)

    def call(fn: Callable[..., Any]) -> tuple[Any, ...]:
        if case.startswith("async"):
            return _outcome(lambda: asyncio.run(fn(3)))
        return _outcome(lambda: fn(3))

    assert call(wrapped) == call(plain)
    assert wrapped.__name__ == plain.__name__


# --- the four paths that lost or misplaced a span ----------------------------------------


def test_two_throws_in_a_row_reach_the_user_code(tracing: Tracing) -> None:
    log: Log = []
    gen = generation(sync_body)(log, 2)
    assert next(gen) == "item-0"
    assert gen.throw(ValueError("first")) == "recovered-0"
    assert gen.throw(ValueError("second")) == "recovered-again-0"  # escaped the wrapper on main
    assert gen.send("a") == "item-1"
    with pytest.raises(StopIteration) as stop:
        gen.send("b")
    assert stop.value.value == "done-2"
    assert log == [("caught", "first"), ("caught-again", "second"), ("got", "a"), ("got", "b"), ("finally",)]
    (span,) = tracing.by_stage("generation")
    assert (span.attributes or {})["citeline.generation.answer"] == "item-0recovered-0recovered-again-0item-1"


def test_handled_throw_then_close_ends_the_span(tracing: Tracing) -> None:
    log: Log = []
    gen = generation(sync_body)(log, 3)
    next(gen)
    assert gen.throw(ValueError("x")) == "recovered-0"
    gen.close()  # on main the span never ended
    assert log == [("caught", "x"), ("finally",)]
    (span,) = tracing.by_stage("generation")
    assert span.end_time is not None
    assert span.status.is_ok
    assert (span.attributes or {})["citeline.generation.answer"] == "item-0recovered-0"


def test_interleaved_streaming_requests_in_one_thread_stay_in_their_own_traces(tracing: Tracing) -> None:
    @retrieval
    def search(q: str) -> list[dict[str, str]]:
        return [{"doc_id": "d", "chunk_id": f"d#{q}"}]

    @request
    def stream(question: str) -> Any:
        for i in range(2):
            search(f"{question}-{i}")
            yield i

    a, b = stream("a"), stream("b")
    next(a)
    next(b)
    next(a)
    next(b)
    list(a), list(b)
    with request(question="later"):
        search("later")

    reqs = {(s.attributes or {})["citeline.request.question"]: s for s in tracing.by_stage("request")}
    assert set(reqs) == {"a", "b", "later"}
    assert all(r.parent is None for r in reqs.values())  # "later" joined a's trace on main
    traces = {r.context.trace_id for r in reqs.values()}
    assert len(traces) == 3
    for s in tracing.by_stage("retrieval"):
        (chunk,) = attr_strs(s, "citeline.chunks.chunk_id")
        owner = reqs[chunk.split("#")[1].split("-")[0]]
        assert s.context.trace_id == owner.context.trace_id
        assert s.parent is not None and s.parent.span_id == owner.context.span_id


def test_async_stream_abandoned_just_before_the_loop_closes_keeps_its_partial_answer(tmp_path: Path) -> None:
    t = make_tracing(tmp_path)

    @generation
    async def stream(prompt: str) -> Any:
        for part in ["Thirty ", "days ", "[1]."]:
            await asyncio.sleep(0)
            yield part

    async def main() -> None:
        agen = stream("p")
        await agen.__anext__()
        await agen.__anext__()
        # returned with the stream still open: asyncio.run closes it while shutting the loop down

    try:
        asyncio.run(main())
        (span,) = t.by_stage("generation")
        assert (span.attributes or {})["citeline.generation.answer"] == "Thirty days "
        assert span.status.is_ok
        # and it reached the trace file
        (filed,) = [s for s in t.file_spans() if s["attributes"].get("citeline.stage") == "generation"]
        assert filed["attributes"]["citeline.generation.answer"] == "Thirty days "
    finally:
        t.handle.shutdown()
