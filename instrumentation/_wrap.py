"""The stage decorators: one span per call, the right wrapper per function kind.

The wrapper is chosen once, at decoration time: sync, async, generator or
async generator. Our work around the user's call is guarded (logged once,
swallowed); the user's own exceptions are recorded on the span and re-raised
unchanged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Generator, Mapping, Sequence
from contextvars import Token
from typing import Any, Protocol, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode

from . import _config, _guard
from . import _keys as K
from . import _stages as S
from ._chunks import to_columns


class _Call:
    """One decorated call: its span and how to close it."""

    __slots__ = ("span", "stage", "to_chunks")

    def __init__(self, stage: str, span: Span, to_chunks: Any) -> None:
        self.stage = stage
        self.span = span
        self.to_chunks = to_chunks

    def attach(self) -> Token[Context]:
        return otel_context.attach(trace.set_span_in_context(self.span))

    def fail(self, exc: BaseException) -> None:
        try:
            self.span.record_exception(exc)
            self.span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            self.span.end()
        except Exception as err:  # noqa: BLE001
            _guard.report(f"{self.stage} span error recording", err)

    def finish(self, result: Any) -> None:
        try:
            self.span.set_attributes(self._outputs(result))
        except _HookError as err:
            self.span.set_attribute(K.CL_ADAPTER_ERROR, f"{type(err.__cause__).__name__}: {err.__cause__}")
            _guard.report(f"{self.stage} to_chunks hook", err.__cause__ or err, user_hook=True)
        except Exception as err:  # noqa: BLE001 - an odd return value must not break the app
            try:
                self.span.set_attribute(K.CL_ADAPTER_ERROR, f"{type(err).__name__}: {err}")
            finally:
                self.span.end()
            _guard.report(f"reading the {self.stage} result", err)
            return
        self.span.end()

    def _outputs(self, result: Any) -> dict[str, Any]:
        content = _config.record_content()
        limit = _config.max_attributes()
        stage = self.stage
        if stage in ("retrieval", "context"):
            if self.to_chunks is not None:
                try:
                    result = self.to_chunks(result)
                except Exception as err:
                    raise _HookError from err
            chunks = to_columns(result)
            if stage == "retrieval":
                return S.retrieval_attributes(chunks, limit, content)
            prompt = S.text_of(result) if not isinstance(result, list | tuple) else None
            return S.context_attributes(chunks, limit, content, prompt)
        if stage == "generation":
            return S.generation_attributes(result)
        if stage == "resolution":
            return S.resolution_attributes(result)
        return S.render_attributes(result)


class _HookError(Exception):
    """The user's ``to_chunks`` hook raised; carries the original as ``__cause__``."""


def _begin(stage: str, name: str, args: Sequence[Any], kwargs: Mapping[str, Any], to_chunks: Any) -> _Call | None:
    tracer = _config.current_tracer()
    if tracer is None:
        return None
    try:
        attrs = S.start_attributes(stage, args, kwargs, _config.record_content())
        span = tracer.start_span(name, attributes=attrs)
        return _Call(stage, span, to_chunks)
    except Exception as err:  # noqa: BLE001
        _guard.report(f"starting the {stage} span", err)
        return None


def _join_stream(stage: str, items: list[Any]) -> Any:
    """What a generator stage produced, as if it had returned it."""
    if stage != "generation":
        return items
    if items and all(isinstance(x, str) for x in items):
        return "".join(items)
    last = items[-1] if items else ""
    if not isinstance(last, str) and S._get(last, "claims") is not None:
        return last  # a stream that ends with the structured answer
    parts = [x if isinstance(x, str) else S.text_of(x) or "" for x in items]
    return "".join(parts)


def _wrap(fn: Callable[..., Any], stage: str, to_chunks: Any, name: str | None) -> Callable[..., Any]:
    span_name = name or fn.__name__

    if inspect.isasyncgenfunction(fn):

        @functools.wraps(fn)
        async def agen_wrapper(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            call = _begin(stage, span_name, args, kwargs, to_chunks)
            agen = fn(*args, **kwargs)
            if call is None:
                async for item in agen:
                    yield item
                return
            items: list[Any] = []
            done = False
            try:
                while True:
                    token = call.attach()
                    try:
                        item = await agen.__anext__()
                    except StopAsyncIteration:
                        break
                    finally:
                        otel_context.detach(token)
                    items.append(item)
                    yield item
                done = True
            except GeneratorExit:
                await agen.aclose()
                call.finish(_join_stream(stage, items))
                raise
            except BaseException as exc:
                call.fail(exc)
                raise
            finally:
                if done:
                    call.finish(_join_stream(stage, items))

        return agen_wrapper

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            call = _begin(stage, span_name, args, kwargs, to_chunks)
            gen = fn(*args, **kwargs)
            if call is None:
                return (yield from gen)
            items: list[Any] = []
            sent: Any = None
            while True:
                token = call.attach()
                try:
                    item = gen.send(sent)
                except StopIteration as stop:
                    otel_context.detach(token)
                    call.finish(_join_stream(stage, items))
                    return stop.value
                except BaseException as exc:
                    otel_context.detach(token)
                    call.fail(exc)
                    raise
                otel_context.detach(token)
                items.append(item)
                try:
                    sent = yield item
                except GeneratorExit:
                    gen.close()
                    call.finish(_join_stream(stage, items))
                    raise
                except BaseException as exc:  # noqa: BLE001 - forwarded, not swallowed
                    # thrown in by the consumer: hand it to the user's generator
                    try:
                        item = gen.throw(exc)
                    except StopIteration as stop:
                        call.finish(_join_stream(stage, items))
                        return stop.value
                    except BaseException as err:
                        call.fail(err)
                        raise
                    items.append(item)
                    sent = yield item

        return gen_wrapper

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            call = _begin(stage, span_name, args, kwargs, to_chunks)
            if call is None:
                return await fn(*args, **kwargs)
            token = call.attach()
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                call.fail(exc)
                raise
            finally:
                otel_context.detach(token)
            call.finish(result)
            return result

        return async_wrapper

    @functools.wraps(fn)
    def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _begin(stage, span_name, args, kwargs, to_chunks)
        if call is None:
            return fn(*args, **kwargs)
        token = call.attach()
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc)
            raise
        finally:
            otel_context.detach(token)
        call.finish(result)
        return result

    return sync_wrapper


F = TypeVar("F", bound=Callable[..., Any])


class StageDecorator(Protocol):
    """A stage decorator, usable bare (``@retrieval``) or called (``@retrieval(to_chunks=f)``)."""

    @overload
    def __call__(self, fn: F, /) -> F: ...
    @overload
    def __call__(
        self, *, to_chunks: Callable[[Any], Any] | None = None, name: str | None = None
    ) -> Callable[[F], F]: ...


def _make(stage: str, public_name: str, doc: str) -> StageDecorator:
    def decorator(fn: Any = None, /, *, to_chunks: Any = None, name: str | None = None) -> Any:
        if to_chunks is not None and not callable(to_chunks):
            raise TypeError(f"@{public_name}(to_chunks=...) must be a function returning a list of chunks")
        if fn is None:
            return lambda f: _wrap(f, stage, to_chunks, name)
        if not callable(fn):
            raise TypeError(f"@{public_name} decorates a function; got {type(fn).__name__}")
        return _wrap(fn, stage, to_chunks, name)

    decorator.__doc__ = doc
    decorator.__name__ = decorator.__qualname__ = public_name
    return cast(StageDecorator, decorator)


retrieval = _make(
    "retrieval",
    "retrieval",
    "Record the chunks a search returns (doc, chunk, version, hash, score) on a RETRIEVER span.",
)
context_assembly = _make(
    "context",
    "context_assembly",
    "Record the ordered chunks sent to the model and the label each got (default: 1-based position).",
)
generation = _make(
    "generation",
    "generation",
    "Record the raw answer (prose with markers, or structured claims) and the label map in force.",
)
resolution = _make(
    "resolution",
    "resolution",
    "Record marker -> doc/chunk/version/uri as the app resolved each citation.",
)
render = _make(
    "render",
    "render",
    "Record what the user sees: each visible label's target uri, title and ids where known.",
)
