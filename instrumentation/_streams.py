"""Generator and async-generator wrappers that behave exactly like ``yield from``.

A decorated generator must be indistinguishable from the undecorated one:
values sent in reach the user's generator, exceptions thrown in (any number
of times) are handed to it, ``close()`` and abandonment close it, and its
return value comes back out. Around each resume of the user's code the
wrapper makes the span current (``enter``) and detaches it again
(``leave``), so two streams interleaved in one thread, or one asyncio task,
never see each other's span or request state.

What a span does with the stream is the caller's business: a :class:`Hooks`
object hears about each item and about the end (returned, abandoned or
failed). Hooks are guarded by their owners and never raise here.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any, Protocol


class Hooks(Protocol):
    """What a wrapper tells the span around one generator run."""

    def enter(self) -> None:
        """The user's code is about to run: make the span current."""

    def leave(self) -> None:
        """The user's code paused or ended: detach the span."""

    def item(self, value: Any) -> None:
        """The user's generator produced ``value``."""

    def end(self, exc: BaseException | None) -> None:
        """Done: ``None`` when it returned, ``GeneratorExit`` when closed or abandoned, else the error."""


MakeHooks = Callable[[tuple[Any, ...], dict[str, Any]], Hooks | None]


class _NoHooks:
    """No span (citeline not configured): the wrapper only forwards."""

    def enter(self) -> None: ...
    def leave(self) -> None: ...
    def item(self, value: Any) -> None: ...
    def end(self, exc: BaseException | None) -> None: ...


_NO_HOOKS = _NoHooks()


def wrap_generator(fn: Callable[..., Generator[Any, Any, Any]], make_hooks: MakeHooks) -> Callable[..., Any]:
    """A generator function that runs ``fn`` under the hooks ``make_hooks`` returns (None: no span)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        hooks = make_hooks(args, kwargs)
        gen = fn(*args, **kwargs)
        if hooks is None:
            return (yield from gen)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            hooks.enter()
            try:
                if thrown is not None:
                    exc, thrown = thrown, None
                    item = gen.throw(exc)
                else:
                    item = gen.send(sent)
            except StopIteration as stop:
                hooks.leave()
                hooks.end(None)
                return stop.value
            except BaseException as exc:
                hooks.leave()
                hooks.end(exc)
                raise
            hooks.leave()
            hooks.item(item)
            try:
                sent = yield item
            except GeneratorExit as closing:
                hooks.enter()
                try:
                    gen.close()
                except BaseException as exc:
                    hooks.leave()
                    hooks.end(exc)
                    raise
                hooks.leave()
                hooks.end(closing)
                raise
            except BaseException as exc:  # noqa: BLE001 - handed to the user's generator, not swallowed
                thrown, sent = exc, None

    return wrapper


def wrap_async_generator(fn: Callable[..., AsyncGenerator[Any, Any]], make_hooks: MakeHooks) -> Callable[..., Any]:
    """The async-generator form of :func:`wrap_generator` (``asend``/``athrow``/``aclose`` forwarded)."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        hooks = make_hooks(args, kwargs) or _NO_HOOKS
        agen = fn(*args, **kwargs)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            hooks.enter()
            try:
                if thrown is not None:
                    exc, thrown = thrown, None
                    item = await agen.athrow(exc)
                else:
                    item = await agen.asend(sent)
            except StopAsyncIteration:
                hooks.leave()
                hooks.end(None)
                return
            except BaseException as exc:
                hooks.leave()
                hooks.end(exc)
                raise
            hooks.leave()
            hooks.item(item)
            try:
                sent = yield item
            except GeneratorExit as closing:
                # record first: when the event loop is closing, the await below may never finish
                hooks.end(closing)
                await agen.aclose()
                raise
            except BaseException as exc:  # noqa: BLE001 - handed to the user's generator, not swallowed
                thrown, sent = exc, None

    return wrapper
