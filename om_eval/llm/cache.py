"""A persistent, content-addressed cache of model responses that several processes can share.

Why it is built this way:

- **Content-addressed.** Keys come from :func:`om_eval.llm.request.cache_key`, computed once from the frozen
  request before the call. The cache never builds keys and never looks inside requests, so it cannot drop a
  parameter from a key.
- **Files and atomic renames, not SQLite.** Parallel sweep jobs share one cache, often on a network filesystem
  across machines, where SQLite's file locking is unreliable (its own documentation warns against NFS). An entry
  is one file: written to a uniquely named temporary file in its final directory, fsynced, then
  ``os.replace``-d onto its name. A reader sees no file or a whole file, never half of one. Concurrent puts of the
  same key are harmless: each rename installs a complete file, and the last one wins.
- **Checksummed.** Each file starts with a header line carrying the sha256 of the rest, and the payload repeats
  its own key. Anything that gets around the rename guarantee (a power cut on a filesystem that reorders writes, a
  partial rsync, a hand edit, a file copied under another key's name) fails the check. It reads as a miss and the
  next ``put`` replaces it. A process killed mid-write leaves only a hidden ``.tmp`` file, which lookups never
  read and :meth:`ResponseCache.clear` sweeps up.
- **Hit and miss counters in one file per cache object.** Each :class:`ResponseCache` keeps its own running
  totals and rewrites its own counter file (atomically) every ``flush_every`` lookups, every few seconds, at
  ``close()`` and at interpreter exit. :meth:`ResponseCache.stats` adds up all the files. No two writers ever
  share a counter file, so nothing needs a lock. A SIGKILL can lose the last few counts but cannot corrupt any.
  :meth:`ResponseCache.clear` starts a new *stats epoch*, and counter files from an older epoch are ignored. That
  way a long-running job cannot bring back counts from before the clear.

Layout under the root::

    entries/<key[:2]>/<key>.json      one response: "om-eval-cache/1 <sha256 of body>\\n" + JSON body
    stats/<host>-<pid>-<id>.json      running totals of one cache object
    stats/epoch                       id of the current stats epoch (changed by clear)
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import re
import secrets
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from om_eval.common.files import HOST, atomic_write, cache_folder
from om_eval.common.secrets import redact_secrets
from om_eval.llm.request import LLMRequest

__all__ = ["CacheStats", "CachedResponse", "ResponseCache", "default_cache_dir"]

log = logging.getLogger(__name__)

_MAGIC = b"om-eval-cache/1 "
_KEY_RE = re.compile(r"[0-9a-f]{16,128}")
_STALE_TMP_SECONDS = 600.0
_FLUSH_SECONDS = 5.0


def default_cache_dir() -> Path:
    """``$OM_EVAL_CACHE_DIR/llm``, else ``$XDG_CACHE_HOME/om-eval/llm``, else ``~/.cache/om-eval/llm``.

    ``OM_EVAL_CACHE_DIR`` is om-eval's cache base: model answers go to ``llm/``, local weights to ``models/``.
    """
    return cache_folder("llm")


def _optional(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
        raise TypeError(f"{name} must be {kind} or None, got {value!r}")
    return value


def _required_str(data: Mapping[str, Any], name: str) -> str:
    value = data[name]
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {value!r}")
    return value


@dataclass(frozen=True)
class CachedResponse:
    """One stored model response.

    Attributes:
        text: the completion text.
        model: the model that answered, as the provider reported it (may be a dated snapshot).
        prompt_tokens: prompt tokens of the original call, if known.
        completion_tokens: completion tokens of the original call, if known.
        cost_usd: what the original call cost; ``None`` means the price was unknown (not free).
        created_at: ISO-8601 time of the original call.
        request_model: the model id that was requested.
        tool_calls: the tool calls of the reply, in OpenAI's shape (stored only when there are some, so entries
            written before tools existed read back unchanged).
        cached_prompt_tokens: of the original call's prompt tokens, those the provider read from its prompt cache
            (stored only when it said, as ``tool_calls`` are).
        cache_write_tokens: of them, those it wrote to its prompt cache (stored the same way).
        finish_reason: why the original reply stopped (stored when the provider said).
        logprobs: the reply's per-token log probabilities, when the request asked for them (stored only then).
    """

    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    created_at: str
    request_model: str
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    cached_prompt_tokens: int | None = None
    cache_write_tokens: int | None = None
    finish_reason: str | None = None
    logprobs: tuple[Mapping[str, Any], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return {
            "text": self.text,
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "created_at": self.created_at,
            "request_model": self.request_model,
            **({"tool_calls": [dict(call) for call in self.tool_calls]} if self.tool_calls else {}),
            **({"cached_prompt_tokens": self.cached_prompt_tokens} if self.cached_prompt_tokens is not None else {}),
            **({"cache_write_tokens": self.cache_write_tokens} if self.cache_write_tokens is not None else {}),
            **({"finish_reason": self.finish_reason} if self.finish_reason is not None else {}),
            **({"logprobs": [dict(token) for token in self.logprobs]} if self.logprobs is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CachedResponse:
        """Inverse of :meth:`to_dict`. Unknown keys are ignored. A missing or ill-typed field raises."""
        cost = _optional(data, "cost_usd", (int, float))
        return cls(
            text=_required_str(data, "text"),
            model=_required_str(data, "model"),
            prompt_tokens=_optional(data, "prompt_tokens", int),
            completion_tokens=_optional(data, "completion_tokens", int),
            cost_usd=None if cost is None else float(cost),
            created_at=_required_str(data, "created_at"),
            request_model=_required_str(data, "request_model"),
            tool_calls=_tool_calls(data),
            cached_prompt_tokens=_optional(data, "cached_prompt_tokens", int),
            cache_write_tokens=_optional(data, "cache_write_tokens", int),
            finish_reason=_optional(data, "finish_reason", str),
            logprobs=_logprobs(data),
        )


def _logprobs(data: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...] | None:
    tokens = data.get("logprobs")
    if tokens is None:
        return None
    if not isinstance(tokens, list) or not all(isinstance(token, Mapping) for token in tokens):
        raise ValueError("field 'logprobs' must be a list of objects")
    return tuple(tokens)


def _tool_calls(data: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    calls = data.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(call, Mapping) for call in calls):
        raise ValueError("field 'tool_calls' must be a list of objects")
    return tuple(calls)


@dataclass(frozen=True)
class CacheStats:
    """What is in the cache, and what it has saved since the last ``clear``.

    Attributes:
        entries: stored responses.
        size_bytes: bytes used by the stored responses.
        hits: lookups served from the cache, summed over every process that used it.
        misses: lookups that found nothing (or a corrupt entry).
        hits_unknown_cost: hits whose original call had no known price (not counted in ``dollars_saved``).
        dollars_saved: summed ``cost_usd`` of the responses served as hits.
    """

    entries: int
    size_bytes: int
    hits: int
    misses: int
    hits_unknown_cost: int
    dollars_saved: float

    @property
    def hit_rate(self) -> float | None:
        """Hits over lookups, or ``None`` before any lookup."""
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields, with the hit rate."""
        return {
            "entries": self.entries,
            "size_bytes": self.size_bytes,
            "hits": self.hits,
            "misses": self.misses,
            "hit_rate": self.hit_rate,
            "hits_unknown_cost": self.hits_unknown_cost,
            "dollars_saved": self.dollars_saved,
        }




def _brief(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int, float, bool)) else f"<{type(value).__name__}>"


def _summarise(request: LLMRequest | None, stage: str | None, scope: Any) -> dict[str, Any] | None:
    """A few readable facts about the request, stored beside the response for debugging (not part of the key)."""
    if request is None and stage is None and scope is None:
        return None
    summary: dict[str, Any] = {"stage": stage, "scope": redact_secrets(scope)}
    if request is not None:
        last = request.messages[-1] if request.messages else {}
        content = last.get("content")
        summary.update(
            model=request.model,
            messages=len(request.messages),
            last_message=(f"{last.get('role')}: {content[:160]}" if isinstance(content, str) else last.get("role")),
            params={name: _brief(value) for name, value in sorted(redact_secrets(dict(request.params)).items())},
        )
    return summary


class ResponseCache:
    """A directory of stored responses, keyed by :func:`~om_eval.llm.request.cache_key`.

    Safe to share between threads, processes and machines (see the module docstring). Use it as a context manager,
    or call :meth:`close`, to write the last hit/miss counts promptly. Interpreter exit does it too.

    Args:
        root: the cache directory; :func:`default_cache_dir` when ``None``. Created on the first write.
        fsync: fsync each entry before renaming it into place (durable across power cuts). Switch it off only for
            throwaway caches.
        flush_every: write this object's counters to disk after this many lookups. They are also written when
            at least 5 seconds have passed since the last write, and on ``close``/``stats``/exit.
    """

    def __init__(self, root: Path | str | None = None, *, fsync: bool = True, flush_every: int = 256) -> None:
        self.root = Path(os.path.abspath(Path(root).expanduser() if root is not None else default_cache_dir()))
        self._entries = self.root / "entries"
        self._entries_prefix = f"{self._entries}{os.sep}"
        self._stats_dir = self.root / "stats"
        self._fsync = fsync
        self._flush_every = max(1, int(flush_every))
        self._lock = threading.RLock()
        self._reset_counters()
        _LIVE.add(self)

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.root)!r})"

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- entries -------------------------------------------------------------------------------------------------

    def _path(self, key: str) -> str:
        if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
            raise ValueError(f"cache key must be 16-128 lowercase hex characters (see cache_key), got {key!r}")
        return f"{self._entries_prefix}{key[:2]}{os.sep}{key}.json"  # plain strings: pathlib costs ~20 us a lookup

    def _load(self, key: str) -> CachedResponse | None:
        path = self._path(key)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return None
        except OSError as error:
            log.warning("cache entry %s is unreadable, treated as a miss: %s", path, error)
            return None
        try:
            head, newline, body = data.partition(b"\n")
            if not newline or not head.startswith(_MAGIC):
                raise ValueError("no header line")
            if hashlib.sha256(body).hexdigest().encode("ascii") != head[len(_MAGIC) :]:
                raise ValueError("checksum mismatch (torn or edited file)")
            payload = json.loads(body)
            if payload.get("key") != key:
                raise ValueError(f"file holds key {payload.get('key')!r}")
            return CachedResponse.from_dict(payload["response"])
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            log.warning("cache entry %s is corrupt, treated as a miss (the next put replaces it): %s", path, error)
            return None

    def get(self, key: str) -> CachedResponse | None:
        """The stored response for ``key``, or ``None``. Counts a hit or a miss; a corrupt entry is a miss."""
        response = self._load(key)
        with self._lock:
            if response is None:
                self._misses += 1
            else:
                self._hits += 1
                if response.cost_usd is None:
                    self._hits_unknown_cost += 1
                else:
                    self._dollars_saved += response.cost_usd
            self._pending += 1
            if self._pending >= self._flush_every or time.monotonic() - self._flushed_at >= _FLUSH_SECONDS:
                self._flush_locked()
        return response

    def contains(self, key: str) -> bool:
        """Whether ``get`` would return a response right now. Nothing is counted."""
        return self._load(key) is not None

    def put(
        self,
        key: str,
        response: CachedResponse,
        *,
        request: LLMRequest | None = None,
        stage: str | None = None,
        scope: Any = None,
        durable: bool = True,
    ) -> None:
        """Store ``response`` under ``key``, replacing any entry (valid or corrupt) atomically.

        ``request``, ``stage`` and ``scope`` only feed a short readable summary kept in the entry for debugging.
        They do not change the key. ``durable=False`` skips this entry's fsync (the cache's ``fsync`` setting
        otherwise): for a reply that costs nothing to make again. The rename is atomic either way, so a process
        killed at any moment leaves the whole entry or none; only a power cut can lose a recent one.
        """
        if not isinstance(response, CachedResponse):
            raise TypeError(f"put expects a CachedResponse, got {type(response).__name__}")
        path = self._path(key)
        payload = {
            "key": key,
            "response": response.to_dict(),
            "request": _summarise(request, stage, scope),
            "stored_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        body = json.dumps(payload, indent=1, ensure_ascii=False, default=repr).encode("utf-8")
        header = _MAGIC + hashlib.sha256(body).hexdigest().encode("ascii") + b"\n"
        atomic_write(path, header + body, fsync=self._fsync and durable)

    def discard(self, key: str) -> bool:
        """Remove the entry for ``key`` (a reply its caller found unusable). Returns whether there was one."""
        try:
            os.unlink(self._path(key))
        except FileNotFoundError:
            return False
        return True

    def _entry_files(self) -> list[os.DirEntry[str]]:
        found: list[os.DirEntry[str]] = []
        try:
            shards = [s for s in os.scandir(self._entries) if s.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return found
        for shard in shards:
            try:
                found.extend(os.scandir(shard.path))
            except FileNotFoundError:
                continue
        return found

    # -- counters ------------------------------------------------------------------------------------------------

    def _reset_counters(self) -> None:
        self._hits = self._misses = self._hits_unknown_cost = 0
        self._dollars_saved = 0.0
        self._pending = 0
        self._flushed_at = time.monotonic()
        self._flushed: tuple[int, int, int, float] = (0, 0, 0, 0.0)
        self._epoch: str | None = None
        self._stats_name = f"{HOST}-{os.getpid()}-{secrets.token_hex(4)}.json"

    def _read_epoch(self) -> str:
        # The epoch is an opaque token: a damaged file still reads as one (the same for every process), rather than
        # failing every lookup that flushes counters.
        try:
            return (self._stats_dir / "epoch").read_bytes().decode("utf-8", "replace").strip() or "0"
        except FileNotFoundError:
            return "0"

    def _flush_locked(self) -> None:
        self._pending = 0
        self._flushed_at = time.monotonic()
        current = (self._hits, self._misses, self._hits_unknown_cost, self._dollars_saved)
        if current == self._flushed:
            return
        try:
            epoch = self._read_epoch()
            if self._epoch is not None and epoch != self._epoch:
                # Someone cleared the cache since our last write: keep only the lookups counted since then.
                before = self._flushed
                hits, misses = current[0] - before[0], current[1] - before[1]
                unknown, saved = current[2] - before[2], current[3] - before[3]
                self._reset_counters()
                self._hits, self._misses, self._hits_unknown_cost, self._dollars_saved = hits, misses, unknown, saved
                current = (hits, misses, unknown, saved)
            self._epoch = epoch
            record = {
                "epoch": epoch,
                "hits": current[0],
                "misses": current[1],
                "hits_unknown_cost": current[2],
                "dollars_saved": current[3],
                "host": HOST,
                "pid": os.getpid(),
                "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            atomic_write(self._stats_dir / self._stats_name, json.dumps(record).encode("utf-8"))
            self._flushed = current
        except OSError as error:  # a read-only or full disk must never break a lookup
            log.warning("could not write cache counters under %s: %s", self._stats_dir, error)

    def flush(self) -> None:
        """Write this object's hit/miss counters to disk now."""
        with self._lock:
            self._flush_locked()

    def close(self) -> None:
        """Flush the counters. The object stays usable."""
        self.flush()

    def __del__(self) -> None:
        # A cache dropped before interpreter exit leaves the weak registry, so the exit hook would miss it.
        try:
            self.flush()
        except Exception:
            pass

    def stats(self) -> CacheStats:
        """Entries and size on disk, plus hits, misses and dollars saved summed over every process since ``clear``."""
        self.flush()
        entries = size = 0
        for item in self._entry_files():
            if item.name.startswith(".") or not item.name.endswith(".json"):
                continue
            try:
                size += item.stat(follow_symlinks=False).st_size
            except FileNotFoundError:
                continue
            entries += 1
        hits = misses = unknown = 0
        saved = 0.0
        epoch = self._read_epoch()
        try:
            counter_files = [f for f in os.scandir(self._stats_dir) if f.name.endswith(".json")]
        except FileNotFoundError:
            counter_files = []
        for item in counter_files:
            try:
                with open(item.path, "rb") as handle:
                    record = json.loads(handle.read())
                if record.get("epoch") != epoch:
                    continue
                hits += int(record["hits"])
                misses += int(record["misses"])
                unknown += int(record["hits_unknown_cost"])
                saved += float(record["dollars_saved"])
            except (OSError, ValueError, TypeError, KeyError, AttributeError):
                continue  # vanished or unreadable counters are skipped, never fatal
        return CacheStats(entries, size, hits, misses, unknown, saved)

    def clear(self) -> int:
        """Remove every entry and reset the counters of all processes. Returns the number of entries removed.

        Temporary files younger than ten minutes are left alone, since another process may be about to rename
        one into place. Older ones come from killed writers and are removed.
        """
        with self._lock:
            self._stats_dir.mkdir(parents=True, exist_ok=True)
            atomic_write(self._stats_dir / "epoch", secrets.token_hex(8).encode("ascii"), fsync=self._fsync)
            for item in os.scandir(self._stats_dir):
                if item.name.endswith(".json") or item.name.endswith(".tmp"):
                    try:
                        os.unlink(item.path)
                    except FileNotFoundError:
                        pass
            self._reset_counters()
        removed = 0
        now = time.time()
        for item in self._entry_files():
            is_entry = not item.name.startswith(".") and item.name.endswith(".json")
            try:
                if not is_entry and now - item.stat(follow_symlinks=False).st_mtime < _STALE_TMP_SECONDS:
                    continue
                os.unlink(item.path)
            except FileNotFoundError:
                continue
            removed += is_entry
        return removed


_LIVE: weakref.WeakSet[ResponseCache] = weakref.WeakSet()


def _flush_all() -> None:
    for cache in list(_LIVE):
        try:
            cache.flush()
        except Exception:
            pass


def _after_fork_in_child() -> None:
    """A forked child starts its own counters (the parent still owns its own) and flushes them when it ends."""
    for cache in list(_LIVE):
        cache._lock = threading.RLock()
        cache._reset_counters()
    # multiprocessing's forked workers leave through os._exit, skipping atexit, but they run its finalizers. The
    # finalizer registry is emptied after this hook and before the after-fork callbacks, so register through one.
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None and _LIVE:
        mp_util.register_after_fork(_FORK_TOKEN, _add_exit_finalizer)


class _Token:
    """A weak-referenceable object for ``multiprocessing.util.register_after_fork``."""


_FORK_TOKEN = _Token()


def _add_exit_finalizer(_: object) -> None:
    sys.modules["multiprocessing.util"].Finalize(None, _flush_all, exitpriority=0)


atexit.register(_flush_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
