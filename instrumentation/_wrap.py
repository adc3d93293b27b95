"""The stage decorators: one span per call, the right wrapper per function kind.

The wrapper is chosen once, at decoration time: sync, async, generator or
async generator (the last two in ``_streams``, which forward ``send``,
``throw`` and ``close`` exactly as ``yield from`` would). Our work around the
user's call is guarded (logged once, swallowed); the user's own exceptions
are recorded on the span and re-raised unchanged.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from contextvars import Token
from typing import Any, Protocol, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span

from . import _config, _guard, _perturb
from . import _stages as S
from . import schema as K
from ._content import error_text, record_error
from ._streams import wrap_async_generator, wrap_generator
from .chunks import to_columns
from .prompt import prompt_text

_ABANDONED = (GeneratorExit, asyncio.CancelledError)


class _Call:
    """One decorated call: its span, how to close it, and (for streams) what it produced."""

    __slots__ = ("args", "items", "kwargs", "name", "span", "stage", "to_chunks", "token")

    def __init__(
        self, stage: str, name: str, span: Span, to_chunks: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> None:
        self.stage = stage
        self.name = name
        self.span = span
        self.to_chunks = to_chunks
        # a context step that returns only a prompt is read against the chunks handed to it
        self.args = args if stage == "context" else ()
        self.kwargs = kwargs if stage == "context" else {}
        self.items: list[Any] = []
        self.token: Token[Context] | None = None

    # --- stream hooks (see _streams.Hooks) -----------------------------------------
    def enter(self) -> None:
        try:
            self.token = otel_context.attach(trace.set_span_in_context(self.span))
        except Exception as err:  # noqa: BLE001
            _guard.report(f"entering the {self.stage} span", err)

    def leave(self) -> None:
        token, self.token = self.token, None
        if token is not None:
            try:
                otel_context.detach(token)
            except Exception as err:  # noqa: BLE001
                _guard.report(f"leaving the {self.stage} span", err)

    def item(self, value: Any) -> None:
        self.items.append(value)

    def end(self, exc: BaseException | None) -> None:
        # a stream that failed records no output: the user saw an error, not its partial answer.
        # Closed or cancelled (asyncio cancels what is left when the loop shuts down) is
        # abandoned: the user saw what was produced.
        if exc is None or isinstance(exc, _ABANDONED):
            self.finish(_join_stream(self.stage, self.items))
        else:
            self.fail(exc)

    # --- ending the span -------------------------------------------------------------
    def hand_on(self, result: Any) -> Any:
        """Record ``result`` and give it to the caller: the one place a stage's return value is handed on.

        Only the perturbation harness can make the value handed on differ from the one returned
        (``_perturb``); the span then records the value the next stage really gets.
        """
        result = _perturb.hand_on(self.stage, self.span, result, self.args, self.kwargs)
        self.finish(result)
        return result

    def fail(self, exc: BaseException) -> None:
        try:
            record_error(self.span, exc, _config.record_content())
            self.span.end()
        except Exception as err:  # noqa: BLE001
            _guard.report(f"{self.stage} span error recording", err)

    def finish(self, result: Any) -> None:
        try:
            self.span.set_attributes(self._outputs(result))
        except _HookError as err:
            cause = err.__cause__ or err
            self.span.set_attribute(K.CL_ADAPTER_ERROR, error_text(cause, _config.record_content()))
            _guard.report(f"{self.stage} to_chunks hook", err.__cause__ or err, user_hook=True)
        except S.NothingToLookFor as err:  # a prompt with nothing to look for: loud on the span and in the log
            self.span.set_attribute(K.CL_ADAPTER_ERROR, str(err))
            _guard.warn_once(f"{self.stage}:{self.name}:prompt", f"citeline: {self.stage} step {self.name!r}: {err}")
        except Exception as err:  # noqa: BLE001 - an odd return value must not break the app
            try:
                self.span.set_attribute(K.CL_ADAPTER_ERROR, error_text(err, _config.record_content()))
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
            elif stage == "context":
                prompt = prompt_text(result)
                if prompt is not None:
                    return S.context_from_prompt(prompt, self.args, self.kwargs, limit, content)
            chunks = to_columns(result)
            if chunks.derived_ids:
                _guard.warn_once(
                    f"{stage}:{self.name}:ids",
                    f"citeline: {stage} step {self.name!r} returned {chunks.derived_ids} chunk(s) without an id; "
                    "citeline recorded ids derived from source, offset and content hash. Give each chunk a "
                    "'chunk_id' (e.g. in Document.metadata) or pass to_chunks= to the decorator for ids that "
                    "match your gold set.",
                )
            if stage == "retrieval":
                return S.retrieval_attributes(chunks, limit, content)
            prompt = S.text_of(result) if not isinstance(result, list | tuple) else None
            return S.context_attributes(chunks, limit, content, prompt)
        if stage == "generation":
            return S.generation_attributes(result, content)
        if stage == "resolution":
            return S.resolution_attributes(result)
        return S.render_attributes(result, content)


class _HookError(Exception):
    """The user's ``to_chunks`` hook raised; carries the original as ``__cause__``."""


def _begin(stage: str, name: str, args: Sequence[Any], kwargs: Mapping[str, Any], to_chunks: Any) -> _Call | None:
    tracer = _config.current_tracer()
    if tracer is None:
        return None
    try:
        attrs = S.start_attributes(stage, args, kwargs, _config.record_content())
        span = tracer.start_span(name, attributes=attrs)
        return _Call(stage, name, span, to_chunks, args, kwargs)
    except Exception as err:  # noqa: BLE001
        _guard.report(f"starting the {stage} span", err)
        return None


def _join_stream(stage: str, items: list[Any]) -> Any:
    """What a generator stage produced, as if it had returned it (None: nothing yet)."""
    if not items:
        return None
    if stage != "generation":
        return items
    if all(isinstance(x, str) for x in items):
        return "".join(items)
    last = items[-1]
    if not isinstance(last, str) and S._get(last, "claims") is not None:
        return last  # a stream that ends with the structured answer
    parts = [x if isinstance(x, str) else S.text_of(x) or "" for x in items]
    return "".join(parts)


def _wrap(fn: Callable[..., Any], stage: str, to_chunks: Any, name: str | None) -> Callable[..., Any]:
    span_name = name or fn.__name__

    def hooks(args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Call | None:
        return _begin(stage, span_name, args, kwargs, to_chunks)

    if inspect.isasyncgenfunction(fn):
        return wrap_async_generator(fn, hooks)
    if inspect.isgeneratorfunction(fn):
        return wrap_generator(fn, hooks)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            call = _begin(stage, span_name, args, kwargs, to_chunks)
            if call is None:
                return await fn(*args, **kwargs)
            call.enter()
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                call.leave()
                call.fail(exc)
                raise
            call.leave()
            return call.hand_on(result)

        return async_wrapper

    @functools.wraps(fn)
    def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _begin(stage, span_name, args, kwargs, to_chunks)
        if call is None:
            return fn(*args, **kwargs)
        call.enter()
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            call.leave()
            call.fail(exc)
            raise
        call.leave()
        return call.hand_on(result)

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
