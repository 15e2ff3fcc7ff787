"""What a run keeps of one question, and how the memories several questions share are built once.

A memory is named by its build (:mod:`om_eval.memory.identity`), so every answering variant of the same memory
(another actor, another judge) finds it again; memories several questions share (a LoCoMo conversation's) are built
once per job (:class:`SharedBuilds`). The answer and its figures land in one flat :class:`QuestionRun` row.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import zlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from om_eval.common.files import short_hash


class SharedBuildFailed(RuntimeError):
    """A shared memory failed to build twice in one job."""


class SharedBuilds:
    """Memories that several questions share (a LoCoMo conversation's), built once per job and handed to each.

    The first question of a haystack builds it; the others wait for that build and get it marked ``reused`` (so
    its OM events and snapshot are recorded once, with the builder's item). A failed build is not handed on: the
    next question tries once more, so one passing error does not fail a whole conversation; after a second
    failure the haystack's remaining questions fail at once with that error (each would fail the same way, a
    deterministic model reply at temperature 0 most of all) and are retried on resume. Only the ``keep`` most
    recent haystacks stay in memory (questions come in file order, grouped by haystack); an older one comes back
    from the snapshot store.

    ``close`` is called once on every build this object made, when no question holds it any more (:meth:`holding`)
    and it has left the ``keep`` most recent, or at :meth:`close_all`: a library's memory can free what it holds
    outside Python (a database, a folder).
    """

    def __init__(self, keep: int = 4, close: Callable[[Any], None] | None = None) -> None:
        self.keep = max(1, keep)
        # SystemBuild, or any frozen dataclass with a ``reused`` field.
        self._builds: OrderedDict[str, asyncio.Future[Any]] = OrderedDict()
        self._failures: dict[str, list[Exception]] = {}
        self._close = close
        self._users: dict[str, int] = {}
        self._evicted: list[tuple[str, asyncio.Future[Any]]] = []
        self.builds = 0
        """Builds this object started (replays or snapshot loads), for reports and tests."""

    @contextlib.asynccontextmanager
    async def holding(self, owner: str, make: Callable[[], Awaitable[Any]]) -> AsyncIterator[Any]:
        """:meth:`get`, held until the block ends: a build is closed only once no question holds it."""
        self._users[owner] = self._users.get(owner, 0) + 1
        try:
            yield await self.get(owner, make)
        finally:
            self._users[owner] = self._users.get(owner, 1) - 1  # close_all may have cleared it
            self._close_evicted()

    def close_all(self) -> None:
        """Close every build still kept or waiting to be closed (the job is over)."""
        self._evicted += list(self._builds.items())
        self._builds.clear()
        self._users.clear()
        self._close_evicted()

    def _close_evicted(self) -> None:
        waiting = []
        for owner, future in self._evicted:
            if self._users.get(owner, 0) > 0:
                waiting.append((owner, future))  # a question may still answer from it
            elif self._close is not None and future.done() and not future.cancelled() \
                    and future.exception() is None:
                self._close(future.result())
        self._evicted = waiting

    async def get(self, owner: str, make: Callable[[], Awaitable[Any]]) -> Any:
        while True:  # ends: each pass returns, raises, or waits for a build, and at most two builds fail
            failed = self._failures.get(owner, [])
            if len(failed) >= 2:
                raise SharedBuildFailed(f"the memory of {owner} failed to build twice in this run, so its other "
                                        f"questions are left for a resume: {failed[-1]}") from failed[-1]
            future = self._builds.get(owner)
            if future is None:
                return await self._make(owner, make)
            self._builds.move_to_end(owner)
            try:
                return replace(await asyncio.shield(future), reused=True)
            except asyncio.CancelledError:
                raise
            except Exception:  # the builder's question records the error; the next one tries again
                if self._builds.get(owner) is future:
                    del self._builds[owner]

    async def _make(self, owner: str, make: Callable[[], Awaitable[Any]]) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._builds[owner] = future
        while len(self._builds) > self.keep:
            self._evicted.append(self._builds.popitem(last=False))
        self.builds += 1
        try:
            build = await make()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as error:
            self._failures.setdefault(owner, []).append(error)
            future.set_exception(error)
            future.exception()  # retrieved here: a build nobody waited for must not warn at exit
            raise
        future.set_result(build)
        return build


@dataclass(frozen=True)
class QuestionRun:
    """Everything one question produced, flat enough for a results table."""

    question_id: str
    question_type: str
    is_abstention: bool
    hypothesis: str
    label: bool | None
    judge_status: str
    judge_reply: str
    memory_key: str
    reused_memory: bool
    history_tokens: int
    actor_prompt_tokens: int | None
    actor_completion_tokens: int | None
    actor_prompt_hash: str
    observer_calls: int | None = None
    """Calls of the observer stage; ``None`` for a system that makes none (RAG, the baseline readers)."""
    reflector_calls: int | None = None
    observations: int | None = None
    """OM's figures from here to ``compression_ratio``: ``None`` for a system that does not report them."""
    reflections: int | None = None
    observation_tokens: int | None = None
    pending_tokens: int | None = None
    compression_ratio: float | None = None
    error: str | None = None
    question: str = ""
    gold_answer: str = ""
    question_date: str = ""
    actor_prompt: bytes | None = None
    """What the actor saw: :func:`pack_messages` of its messages (read back with :func:`unpack_messages`)."""
    evidence: str | None = None
    """JSON list of :class:`~om_eval.bench.trace.EvidenceTrace`: where each evidence turn went."""
    judge_identity: str = ""
    """JSON of the judge's identity (its cache scope), so a verdict can be told from a re-judging's."""
    judge_official: bool = False
    tool_calls: int | None = None
    """Retrieval mode: how many recall calls the actor made (``None``: it had no tool)."""
    recall_steps: str | None = None
    """Retrieval mode: JSON of those calls (:class:`~om_eval.bench.tool_loop.ToolStep`)."""
    context_tokens: int | None = None
    """Tokens of the memory the actor was shown (instructions and question left out), with the run's tokenizer."""
    retrieval: str | None = None
    """A retrieval system's ranking and recall@k, as JSON (:func:`~om_eval.bench.seam.retrieval_record`)."""
    turns: str | None = None
    """JSON of the memory's :class:`~om_eval.bench.turn_costs.TurnTable`, with the item of the question that built
    it (``None`` on the others that share it, and where nothing was recorded)."""
    detail: str | None = None
    """JSON of a seam system's own figures for the answer (:attr:`~om_eval.memory.system.MemoryContext.detail`)."""
    observed_message_tokens: int | None = None
    """OM: message tokens its Observer was given, summed over its calls."""
    observation_cycles: int | None = None
    """OM: times observation ran."""
    raw_tail_tokens: int | None = None
    """OM: tokens of the raw (unobserved) messages the actor was shown."""
    score: float | None = None
    """The judge's score of the answer where it scores rather than labels (BEAM); the items' ``score`` column."""

    def row(self) -> dict[str, Any]:
        """The ``items`` row (judge identity aside: it belongs to :meth:`judgment`)."""
        row = asdict(self)
        del row["judge_identity"], row["judge_official"]
        return row

    def judgment(self) -> dict[str, Any]:
        """The verdict as a ``judgments`` row."""
        identity = json.loads(self.judge_identity) if self.judge_identity else {}
        return {"judge_identity": self.judge_identity or "{}", "judge_mode": identity.get("mode"),
                "judge_model": identity.get("model"), "official": self.judge_official,
                "hypothesis_hash": hypothesis_hash(self.hypothesis), "label": self.label,
                "status": self.judge_status, "reply": self.judge_reply, "error": self.error}


def hypothesis_hash(hypothesis: str | None) -> str | None:
    """Which answer a verdict is about (verdicts of an earlier answer to the same question do not count)."""
    return None if hypothesis is None else short_hash(hypothesis)


def pack_messages(messages: Sequence[dict[str, str]]) -> bytes:
    """Chat messages as compressed JSON (an S-sized actor prompt shrinks about fivefold)."""
    return zlib.compress(json.dumps(list(messages), ensure_ascii=False).encode("utf-8"), 6)


def unpack_messages(blob: bytes | None) -> list[dict[str, str]] | None:
    """The messages :func:`pack_messages` stored, or None when nothing was stored."""
    if blob is None:
        return None
    return json.loads(zlib.decompress(bytes(blob)).decode("utf-8"))
