"""One question end to end: build (or reuse) its memory, answer, judge; with per-question statistics.

Phases have durable boundaries. The memory built by a replay is saved as a snapshot keyed by the *memory hash*
(OM config, replay protocol, prompt wording, token estimator), so every answering variant of the same memory
(another actor, another judge) reuses it without a single observer call; answers can be re-judged without
replaying anything.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from om_eval.bench.answer import actor_prompts, answer_question
from om_eval.bench.recall_actor import steps_json
from om_eval.bench.replay import ReplayConfig, ReplayStats, replay_question
from om_eval.bench.turn_costs import TurnRecorder, TurnTable
from om_eval.common.files import atomic_writer, safe_file_name, short_hash
from om_eval.common.run_identity import MEMORY_KEY_RULE
from om_eval.common.secrets import redact_secrets
from om_eval.data.records import Question
from om_eval.llm.request import canonical_json
from om_eval.om.config import ModelSettings, OMConfig
from om_eval.om.exact.pack import PromptPack
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ChatModel
from om_eval.om.prompts import PROMPT_FILES, prompt_set_hash
from om_eval.om.revision import ENGINE_REVISION
from om_eval.om.tokens import TokenCounter, default_counter

if TYPE_CHECKING:
    from om_eval.bench.judging.judge import AnswerAndJudgeClient

#: The prompt files whose wording shapes a memory: every OM prompt file but the context text, which only shapes
#: what the actor sees (a new variant's file joins by itself).
MEMORY_PROMPTS = tuple(name for name in PROMPT_FILES if name != "context")


def memory_hash(om_config: OMConfig, replay: ReplayConfig, counter_name: str, prompts: str | None = None) -> str:
    """Identity of a memory build: same hash, same memory (given a deterministic, cached observer).

    The settings that enter are chosen by :data:`~om_eval.common.run_identity.MEMORY_KEY_RULE`; credentials never do.
    ``prompts``: the identity of the prompts the models read when they are not om-eval's own (a Mastra pack's,
    :func:`~om_eval.om.wording.pack_identity`); om-eval's own are hashed from their files.
    """
    payload = {
        **MEMORY_KEY_RULE.view({"om": redact_secrets(om_config.to_dict()), "replay": asdict(replay)}),
        "prompts": prompts or prompt_set_hash(MEMORY_PROMPTS),
        "tokens": counter_name,
        "engine_revision": ENGINE_REVISION,
    }
    return short_hash(canonical_json(payload))


def seam_memory_key(spec: Any, system: Any, counter_name: str) -> str:
    """Identity of a seam system's memory build: its name, options and own identity, the models it calls, the
    token counter. Credentials never enter."""
    roles = spec.role_models()
    models = {role: redact_secrets(asdict(settings)) for role, settings in roles.items()
              if role in ("models.observer", "models.embedding")}
    for settings in models.values():
        settings.get("provider_options", {}).pop("price", None)
    payload = {"system": system.name, "options": dict(spec.memory_options), "identity": dict(system.identity()),
               "models": models, "tokens": counter_name}
    return short_hash(canonical_json(payload))


def haystack_hash(question: Question) -> str:
    """Identity of a question's haystack: the same question id in another file (oracle vs S) differs here."""
    sessions = [
        [s.session_id, s.date_text, [[t.role, t.content] for t in s.turns]] for s in question.sessions
    ]
    return short_hash(canonical_json(sessions), 12)


class Snapshots(Protocol):
    """Where built memories are kept: :class:`SnapshotStore`, a run store
    (:class:`~om_eval.store.writer.RunStore`) or a job's snapshot held back until its question is committed."""

    def get(self, key: str, question_id: str) -> Mapping[str, Any] | None: ...

    def put(self, key: str, question_id: str, data: dict[str, Any]) -> object: ...


class SnapshotStore:
    """Memory snapshots on disk: ``<root>/<memory hash>/<memory owner>.json``, written atomically (the owner is the
    question id, or the id of a haystack several questions share)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def _path(self, key: str, question_id: str) -> Path:
        return self.root / key / f"{safe_file_name(question_id)}.json"

    def get(self, key: str, question_id: str) -> dict[str, Any] | None:
        path = self._path(key, question_id)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError):
            return None  # a torn file is rebuilt rather than trusted

    def put(self, key: str, question_id: str, data: dict[str, Any]) -> Path:
        path = self._path(key, question_id)
        with atomic_writer(path, fsync=True) as file:
            json.dump(data, file, ensure_ascii=False)
        return path


@dataclass(frozen=True)
class MemoryBuild:
    memory: ObservationalMemory
    stats: ReplayStats
    key: str
    reused: bool
    renders: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    """What answering rendered from this memory, shared by every question handed the same build."""
    turns: TurnTable | None = field(default=None, compare=False, repr=False)
    """What an agent on this memory would have sent at each user turn (``None``: not recorded)."""


async def build_memory(
    question: Question,
    om_config: OMConfig,
    *,
    observer: ChatModel,
    reflector: ChatModel | None = None,
    replay: ReplayConfig | None = None,
    store: Snapshots | None = None,
    token_counter: TokenCounter | None = None,
    prompts: PromptPack | None = None,
    record_turns: bool = True,
) -> MemoryBuild:
    """The question's memory: loaded from ``store`` when this exact build exists, replayed otherwise (stored under
    the question's :attr:`~om_eval.data.records.Question.memory_owner`, so questions sharing a haystack share it).
    ``prompts``: the Mastra pack of ``prompt=mastra_exact`` (its identity enters the memory key)."""
    replay = replay or ReplayConfig()
    counter = token_counter or default_counter()
    key = f"{memory_hash(om_config, replay, counter.name, prompts.identity if prompts else None)}-" \
          f"{haystack_hash(question)}"
    saved = store.get(key, question.memory_owner) if store is not None else None
    if saved is not None:
        memory = ObservationalMemory.from_snapshot(
            saved["snapshot"], observer=observer, reflector=reflector, token_counter=counter, prompts=prompts
        )
        stats = ReplayStats(**{**saved["stats"], "reflection_errors": list(saved["stats"]["reflection_errors"])})
        turns = TurnTable.from_json(saved["turns"]) if saved.get("turns") else None
        return MemoryBuild(memory, stats, key, reused=True, turns=turns)
    recorder = TurnRecorder(counter, actor_prompts()["instructions"], om_config.context_layout) \
        if record_turns else None
    memory, stats = await replay_question(
        question, om_config, observer=observer, reflector=reflector, replay=replay, token_counter=counter,
        prompts=prompts, turns=recorder,
    )
    saved_turns = {"turns": json.loads(recorder.table.to_json())} if recorder is not None else {}
    if store is not None:
        store.put(key, question.memory_owner, {"snapshot": memory.snapshot(), "stats": asdict(stats), **saved_turns})
    return MemoryBuild(memory, stats, key, reused=False, turns=recorder.table if recorder is not None else None)


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
    """

    def __init__(self, keep: int = 4) -> None:
        self.keep = max(1, keep)
        # MemoryBuild or SystemBuild: any frozen dataclass with a ``reused`` field.
        self._builds: OrderedDict[str, asyncio.Future[Any]] = OrderedDict()
        self._failures: dict[str, list[Exception]] = {}
        self.builds = 0
        """Builds this object started (replays or snapshot loads), for reports and tests."""

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
            self._builds.popitem(last=False)
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
    observer_calls: int
    reflector_calls: int
    observations: int
    reflections: int
    history_tokens: int
    observation_tokens: int | None
    """``None`` for a baseline reader, which builds no memory."""
    pending_tokens: int | None
    """``None`` for a baseline reader, which builds no memory."""
    compression_ratio: float | None
    actor_prompt_tokens: int | None
    actor_completion_tokens: int | None
    actor_prompt_hash: str
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
    """Retrieval mode: JSON of those calls (:class:`~om_eval.bench.recall_actor.ToolStep`)."""
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


async def answer_and_judge(
    question: Question, build: MemoryBuild, *, client: AnswerAndJudgeClient, actor: ModelSettings, judge: Any,
    replay: ReplayConfig | None = None,
) -> QuestionRun:
    """Answer ``question`` from a built memory and judge the answer.

    The result keeps what a reader needs to check the grade: the actor's full prompt (compressed) and where each
    evidence turn of the haystack went (``replay`` must be the protocol the memory was built with).
    """
    from om_eval.bench.judging.judge import judge_answer
    from om_eval.bench.trace import trace_evidence

    answer = await answer_question(client, actor, build.memory, question, build.renders)
    verdict = await judge_answer(judge, client, question, answer.hypothesis)
    evidence = [asdict(t) for t in trace_evidence(question, build.memory, replay)]
    stats = build.stats
    return QuestionRun(
        question_id=question.question_id,
        question_type=question.question_type,
        is_abstention=question.is_abstention,
        hypothesis=answer.hypothesis,
        label=verdict.label,
        judge_status=verdict.status,
        judge_reply=verdict.reply,
        memory_key=build.key,
        reused_memory=build.reused,
        observer_calls=stats.observer_calls,
        reflector_calls=stats.reflector_calls,
        observations=stats.observations,
        reflections=stats.reflections,
        history_tokens=stats.history_tokens,
        observation_tokens=stats.observation_tokens,
        pending_tokens=stats.pending_tokens,
        compression_ratio=stats.compression_ratio,
        actor_prompt_tokens=answer.prompt_tokens,
        actor_completion_tokens=answer.completion_tokens,
        actor_prompt_hash=answer.prompt_hash,
        error=verdict.error,
        question=question.question,
        gold_answer=question.answer_text,
        question_date=question.question_date_text,
        actor_prompt=pack_messages(answer.messages),
        evidence=json.dumps(evidence, ensure_ascii=False),
        judge_identity=json.dumps(judge.identity, sort_keys=True),
        judge_official=judge.is_official,
        context_tokens=answer.context_tokens,
        tool_calls=None if answer.tool_steps is None else len(answer.tool_steps),
        recall_steps=None if answer.tool_steps is None else steps_json(answer.tool_steps),
        # A memory of its own is shown with its question; a shared one (LoCoMo) with the question that built it.
        turns=build.turns.to_json() if build.turns is not None and (
            not build.reused or not question.haystack_id) else None,
    )


async def run_question(
    question: Question,
    *,
    om_config: OMConfig,
    client: AnswerAndJudgeClient,
    actor: ModelSettings,
    judge: Any,
    replay: ReplayConfig | None = None,
    store: SnapshotStore | None = None,
    token_counter: TokenCounter | None = None,
    prompts: PromptPack | None = None,
) -> QuestionRun:
    """Replay (or reuse) memory, answer and judge one question."""
    build = await build_memory(
        question, om_config, observer=client, replay=replay, store=store, token_counter=token_counter,
        prompts=prompts,
    )
    return await answer_and_judge(question, build, client=client, actor=actor, judge=judge, replay=replay)


async def run_questions(
    questions: Sequence[Question],
    *,
    concurrency: int = 4,
    on_result: Callable[[QuestionRun], None] | None = None,
    **kwargs: Any,
) -> list[QuestionRun]:
    """Run many questions, ``concurrency`` at a time; ``on_result`` sees each as soon as it finishes."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(question: Question) -> QuestionRun:
        async with semaphore:
            result = await run_question(question, **kwargs)
        if on_result is not None:
            on_result(result)
        return result

    return list(await asyncio.gather(*(one(q) for q in questions)))
