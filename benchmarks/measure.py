"""Figures that do not wobble, for every benchmark here: the reference loop, CPU time and a deterministic work count.

Why: on a shared 2-core machine wall time moves by more than most changes gain, so a benchmark prints, beside it,
(1) its time as a multiple of a 10-million-step Python loop timed in the same process (a "loop unit": the speed of
this machine at this hour), (2) the CPU time of the process, and (3) a work count that does not depend on the
machine at all: the Python and C function calls made, counted by :mod:`cProfile` in every thread (the event loop,
the store's writer thread, worker threads), with the calls of functions written in Python apart. The count is
deterministic for a fixed input and code (to a few calls in a million, from thread timing); a change that removes
Python-level work lowers it by the share it removes, visible in one run. It counts calls, not the work inside a
built-in: moving a loop into one C call lowers the Python count while the total may rise.

Counting calls slows the code it counts, so a benchmark counts in a separate pass from the one it times.
"""

from __future__ import annotations

import cProfile
import pstats
import resource
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

#: Steps of the reference loop.
LOOP_STEPS = 10_000_000


#: The reference loop as ``python -c 'for _ in range(10_000_000): pass'`` runs it: at module level, its variable a
#: global (inside a function the same loop runs about twice as fast, which would halve every figure's unit).
_LOOP = compile(f"for _ in range({LOOP_STEPS}): pass", "<reference loop>", "exec")


def loop_seconds(repeats: int = 3) -> float:
    """The fastest of ``repeats`` timings of the reference loop: this machine's speed now."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        exec(_LOOP, {})  # a fixed loop, compiled above
        best = min(best, time.perf_counter() - start)
    return best


def cpu_seconds() -> float:
    """User plus system CPU time of this process so far (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_gb() -> float:
    """The process's peak resident memory so far, in GB (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


#: Calls in which a thread waits rather than works.
_WAITS = ("'get' of '_queue.SimpleQueue", "'acquire' of '_thread.lock", "'poll' of 'select.epoll",
          "'control' of 'select.kqueue", "'wait' of", "'select' of", "'join' of")


@dataclass
class WorkCount:
    """Function calls counted while a :func:`counting` block ran."""

    profiles: list[cProfile.Profile] = field(default_factory=list)

    def stats(self) -> pstats.Stats | None:
        profiles = [p for p in self.profiles if p.getstats()]
        if not profiles:
            return None
        stats = pstats.Stats(profiles[0])
        for profile in profiles[1:]:
            stats.add(profile)
        return stats

    @property
    def calls(self) -> int:
        """Every call (primitive and recursive) in every thread, built-in functions included."""
        stats = self.stats()
        return 0 if stats is None else int(stats.total_calls)  # type: ignore[attr-defined]  # set by pstats

    @property
    def python_calls(self) -> int:
        """Calls of functions written in Python (built-ins left out: one C call can do any amount of work, so
        replacing a Python loop by a few C calls lowers this count as it lowers the time)."""
        stats = self.stats()
        if stats is None:
            return 0
        return sum(calls for (file, _, _), (_, calls, _, _, _) in stats.stats.items()  # type: ignore[attr-defined]
                   if file != "~")

    def top(self, n: int = 10) -> str:
        """The ``n`` functions with the most own time, waits left out (a thread blocked on a queue or a lock is idle,
        not working): one line each, own seconds, calls and the function."""
        stats = self.stats()
        if stats is None:
            return ""
        entries = [(own, calls, f"{file}:{line}({name})") for (file, line, name), (_, calls, own, _, _)
                   in stats.stats.items()  # type: ignore[attr-defined]  # pstats keeps its table here
                   if not any(wait in name for wait in _WAITS)]
        entries.sort(reverse=True)
        return "\n".join(f"{own:9.2f} s {calls:>10,}  {where}" for own, calls, where in entries[:n])

    def dump(self, path: str) -> None:
        """The merged profile, for ``python -m pstats``."""
        stats = self.stats()
        if stats is not None:
            stats.dump_stats(path)


@contextmanager
def counting() -> Iterator[WorkCount]:
    """Within the block, every thread's calls are counted (threads started inside it included)."""
    count = WorkCount()
    lock = threading.Lock()

    def start_in_thread(*_: object) -> None:
        # Called at a new thread's first event: hand the thread to its own C-level profiler.
        sys.setprofile(None)
        profile = cProfile.Profile()
        with lock:
            count.profiles.append(profile)
        profile.enable()

    main = cProfile.Profile()
    count.profiles.append(main)
    threading.setprofile(start_in_thread)
    main.enable()
    try:
        yield count
    finally:
        main.disable()
        threading.setprofile(None)  # type: ignore[arg-type]  # None removes the hook
        # A thread's profiler stops with its thread: read the count after the threads of the block have ended.


def loops(seconds: float, loop: float) -> str:
    """``seconds`` in loop units, as printed."""
    return f"{seconds / loop:,.2f} loops"
