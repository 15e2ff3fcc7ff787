"""A digest of an object's state, to tell whether a memory changed while a question was answered from it.

Every value reachable from the object counts: attributes (``__dict__`` and ``__slots__``), items of containers,
array bytes. What is machinery rather than memory counts by its type only: functions, classes and modules (an
observer callback is the same callback), event loops, locks, futures, threads and files (their state moves on its
own), and any class that sets ``state_digest_opaque = True`` (the services the harness lends a system). An object
seen twice counts once, so shared and cyclic structures are fine. The digest only has to be equal for an unchanged
object within one process, so sets and dicts are read in their own order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import logging
import threading
import types
import weakref
from collections import deque
from typing import Any

import xxhash

_SCALARS = (bool, int, float, complex, type(None))
_OPAQUE: tuple[type, ...] = (
    types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType, type, types.CoroutineType,
    types.GeneratorType, asyncio.AbstractEventLoop, asyncio.Future, asyncio.Lock, asyncio.Event, asyncio.Condition,
    asyncio.Semaphore, threading.Thread, io.IOBase, type(threading.Lock()), type(threading.RLock()),
    threading.Condition, threading.Semaphore, threading.Event, concurrent.futures.Future,
    concurrent.futures.Executor, logging.Logger, weakref.ref,
)


def state_digest(value: Any) -> str:
    """A hex digest of everything reachable from ``value`` (equal for an unchanged object)."""
    hasher = xxhash.xxh3_128()
    update = hasher.update
    seen: set[int] = set()
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if isinstance(item, str):
            update(b"s%d:" % len(item))
            update(item.encode("utf-8", "surrogatepass"))
            continue
        if isinstance(item, _SCALARS):
            update(b"n" + repr(item).encode())
            continue
        if isinstance(item, bytes | bytearray | memoryview):
            update(b"b%d:" % len(item))
            update(bytes(item))
            continue
        if isinstance(item, _OPAQUE) or getattr(kind, "state_digest_opaque", False):
            update(b"f" + getattr(item, "__qualname__", kind.__qualname__).encode())
            continue
        if id(item) in seen:
            update(b"@")
            continue
        seen.add(id(item))
        update(b"<" + kind.__qualname__.encode())
        if kind.__module__.startswith("numpy") and hasattr(item, "tobytes"):
            update(repr((getattr(item, "dtype", None), getattr(item, "shape", None))).encode())
            if getattr(getattr(item, "dtype", None), "hasobject", False):
                stack.extend(item.ravel().tolist())  # object arrays hold references: read what they point to
            else:
                update(item.tobytes())
            mask = getattr(item, "mask", None)  # a masked array's mask is state too
            if mask is not None and mask is not item:
                stack.append(mask)
            continue
        if isinstance(item, dict):
            update(b"d%d" % len(item))
            for key, val in item.items():
                stack.append(val)
                stack.append(key)
            continue
        if isinstance(item, list | tuple | set | frozenset | deque):
            update(b"l%d" % len(item))
            stack.extend(reversed(list(item)) if not isinstance(item, set | frozenset) else item)
            continue
        attributes = getattr(item, "__dict__", None)
        if isinstance(attributes, dict):
            stack.append(attributes)
        slots = _slots(kind)
        for slot in slots:
            if hasattr(item, slot):
                stack.append(getattr(item, slot))
                stack.append(slot)
        if attributes is None and not slots:
            update(repr(item).encode("utf-8", "surrogatepass"))  # an object with no reachable state of its own
    return hasher.hexdigest()


#: Slot names by class, read once: a memory holds thousands of objects of a few classes.
_SLOTS: dict[type, tuple[str, ...]] = {}


def _slots(kind: type) -> tuple[str, ...]:
    if (known := _SLOTS.get(kind)) is not None:
        return known
    names: list[str] = []
    for klass in kind.__mro__:
        declared = klass.__dict__.get("__slots__", ())
        names += [declared] if isinstance(declared, str) else [n for n in declared if n not in ("__dict__",
                                                                                                 "__weakref__")]
    _SLOTS[kind] = tuple(names)
    return _SLOTS[kind]
