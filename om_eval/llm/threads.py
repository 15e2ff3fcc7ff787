"""The event loop's threads for litellm: an executor that closes the reply coroutines nobody will await.

Why: ``litellm.acompletion`` runs the blocking ``completion`` in the loop's default executor, and for an async
provider (the scripted model, OpenAI's client, ...) that thread returns the coroutine that makes the request;
litellm awaits it once the thread is done. A task cancelled while the thread runs (Ctrl-C during a run) never takes
that result, the coroutine is dropped unstarted, and Python prints ``RuntimeWarning: coroutine
'...acompletion' was never awaited``. :class:`ReplyExecutor` hands such a coroutine over in a wrapper that awaits it
as usual, and closes it (the quiet way to drop a coroutine) when the wrapper is dropped before it started.
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Callable, Coroutine, Generator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["ReplyExecutor", "use_reply_executor"]


class _Unclaimed(Coroutine[Any, Any, Any]):
    """A coroutine that closes itself when dropped without having started."""

    __slots__ = ("_coro",)

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro = coro

    def __await__(self) -> Generator[Any, None, Any]:
        return self._coro.__await__()

    def send(self, value: Any) -> Any:
        return self._coro.send(value)

    def throw(self, *args: Any) -> Any:
        return self._coro.throw(*args)

    def close(self) -> None:
        self._coro.close()

    def __del__(self) -> None:
        if inspect.getcoroutinestate(self._coro) == inspect.CORO_CREATED:
            self._coro.close()


def _claimable(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    result = fn(*args, **kwargs)
    return _Unclaimed(result) if inspect.iscoroutine(result) else result


class ReplyExecutor(ThreadPoolExecutor):
    """A thread pool whose jobs' coroutine results close themselves when nobody awaits them."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return super().submit(_claimable, fn, *args, **kwargs)


#: Loops given a :class:`ReplyExecutor` already (a second one would leave the first's threads running).
_SERVED: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


def use_reply_executor(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Make :class:`ReplyExecutor` the default executor of ``loop`` (the running loop when omitted), once per loop;
    ``asyncio.run`` shuts it down with the loop. Call it before the loop's first ``to_thread`` or model call."""
    loop = loop or asyncio.get_running_loop()
    if loop not in _SERVED:
        loop.set_default_executor(ReplyExecutor(thread_name_prefix="om-eval-llm"))
        _SERVED.add(loop)
