"""A synchronous library behind the seam: run it on a pool of its own, with blocking twins of the services.

The seam is asynchronous (``ingest``, ``context`` and the services are coroutines), and many memory libraries are
not: mem0's ``Memory.add`` blocks, and calls its model hooks synchronously from inside. Such a library cannot call
``await services.complete(...)``, and ``asyncio.run`` fails inside the running loop. :func:`run_sync` is the
bridge every such adapter needs:

* the library runs on a thread pool of its own (never the loop's default executor, where the in-process local
  models run: a library blocked on a model call that waits for a thread it holds itself would hang the run);
* inside it, :func:`current_services` returns :class:`SyncServices`, blocking twins of the services that hand each
  call back to the event loop, so every call is cached, retried and costed in the right question's ledger. They
  are bound per call with a context variable, because a LoCoMo memory (and the hooks the library holds) is shared
  by questions that each have their own services;
* a twin called on the event loop's own thread would wait for itself forever: it raises instead, naming the fix;
* ``timeout`` bounds the library's whole call; after it the twins refuse further calls, so the thread winds down.

A sketch of an adapter's ingest::

    async def ingest(self, history, services):
        return await run_sync(services, self._build, history, timeout=600)

    def _build(self, history):                      # runs on the library pool
        library = make_library(llm=MyHook())        # MyHook.generate() calls current_services().complete(...)
        for session in history.sessions:
            library.add(...)
        return library
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from om_eval.memory.completion import Completion

__all__ = ["LIBRARY_THREADS", "SyncServices", "current_services", "run_sync"]

T = TypeVar("T")
#: Threads of the library pool: enough for every question of a ``run.concurrency`` far above the default.
LIBRARY_THREADS = 32
#: How often a blocked twin checks that the run it waits on still goes on.
_POLL_SECONDS = 1.0
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_CURRENT: contextvars.ContextVar[SyncServices | None] = contextvars.ContextVar("om_eval_sync_services", default=None)


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=LIBRARY_THREADS, thread_name_prefix="om-eval-library")
        return _POOL


class SyncServices:
    """Blocking twins of a question's :class:`~om_eval.memory.system.MemoryServices`, for code running on the
    library pool (:func:`run_sync`). Each call runs on the event loop and blocks this thread until it is done."""

    def __init__(self, services: Any, loop: asyncio.AbstractEventLoop, system: str) -> None:
        self.services = services
        self.options: Mapping[str, Any] = services.options
        self._loop = loop
        self._loop_thread = threading.get_ident()  # made on the loop's thread (run_sync is a coroutine)
        self._system = system
        self._closed: str | None = None

    def complete(self, messages: Sequence[Mapping[str, Any]], **params: Any) -> Completion:
        """:meth:`MemoryServices.complete <om_eval.memory.system.MemoryServices.complete>`, blocking."""
        reply: Completion = self._wait(self.services.complete(messages, **params), "complete")
        return reply

    def embed(self, texts: Sequence[str], **params: Any) -> list[list[float]]:
        """:meth:`MemoryServices.embed <om_eval.memory.system.MemoryServices.embed>`, blocking."""
        vectors: list[list[float]] = self._wait(self.services.embed(texts, **params), "embed")
        return vectors

    def count_tokens(self, text: str) -> int:
        counted: int = self.services.count_tokens(text)
        return counted

    def scratch_folder(self) -> Any:
        return self.services.scratch_folder()

    @property
    def recording_turns(self) -> bool:
        return bool(self.services.recording_turns)

    def record_turn(self, parts: Sequence[Any], *, at: Any, reply: Any = None) -> None:
        """:meth:`MemoryServices.record_turn <om_eval.memory.system.MemoryServices.record_turn>`, done on the loop
        (where the question's model calls charge the same table), blocking."""

        async def record() -> None:
            self.services.record_turn(parts, at=at, reply=reply)

        self._wait(record(), "record_turn")

    def _wait(self, call: Any, name: str) -> Any:
        if threading.get_ident() == self._loop_thread:
            call.close()
            raise RuntimeError(f"memory={self._system} called the blocking services.{name} on the event loop's own "
                               "thread, which would wait for itself forever: await services." + name + "(...) in "
                               "async code, or run the library with run_sync(services, fn, ...)")
        if self._closed is not None or self._loop.is_closed():
            call.close()
            raise RuntimeError(f"memory={self._system} called services.{name} after "
                               f"{self._closed or 'its run ended'}")
        future = asyncio.run_coroutine_threadsafe(call, self._loop)
        # Waited for in slices: a run that ends (or a library call that times out) while this thread waits must
        # not leave it blocked for good, holding a pool slot and the process's exit.
        while True:
            try:
                return future.result(timeout=_POLL_SECONDS)
            except concurrent.futures.TimeoutError:
                if self._loop.is_closed() or not self._loop.is_running():
                    future.cancel()
                    raise RuntimeError(f"memory={self._system}: services.{name} was left unanswered when the run "
                                       "ended") from None

    def close(self, why: str) -> None:
        """Refuse every later call (the library's call timed out or was cancelled)."""
        self._closed = why


def current_services() -> SyncServices:
    """The blocking services of the :func:`run_sync` call this thread is running.

    Raises:
        RuntimeError: called outside :func:`run_sync` (a library hook invoked on some other thread).
    """
    found = _CURRENT.get()
    if found is None:
        raise RuntimeError("current_services() is only available inside run_sync(services, fn, ...): run the library "
                           "through it so its model calls reach this question's services")
    return found


async def run_sync(services: Any, fn: Callable[..., T], /, *args: Any, timeout: float | None = None,
                   system: str | None = None, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the library pool, with :func:`current_services` bound to ``services``' twins.

    Args:
        timeout: seconds the whole call may take (``None``: no limit). After it a :class:`TimeoutError` names the
            system, and the twins refuse further calls so the library's thread stops at its next model call.
        system: the system's name for messages (default: the services' own).

    Raises:
        TimeoutError: ``fn`` did not return in ``timeout`` seconds.
    """
    loop = asyncio.get_running_loop()
    name = system or str(getattr(services, "system", "this memory system"))
    twins = SyncServices(services, loop, name)
    context = contextvars.copy_context()
    context.run(_CURRENT.set, twins)
    future = loop.run_in_executor(_pool(), functools.partial(context.run, fn, *args, **kwargs))
    deadline = asyncio.timeout(timeout)
    try:
        async with deadline:
            return await future
    except TimeoutError:
        if not deadline.expired():  # the library's own timeout (a socket's): its error, as it raised it
            raise
        twins.close(f"its library call ran past the {timeout:g} s timeout")
        raise TimeoutError(f"memory={name}: the library call {getattr(fn, '__qualname__', fn)!s} took longer than "
                           f"{timeout:g} s (run_sync timeout)") from None
    except asyncio.CancelledError:
        twins.close("its question was cancelled")
        raise
