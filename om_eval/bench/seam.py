"""A question answered through the memory seam: a system's context, the actor, the judge, one results row.

Every system answered here is measured the same way, by the harness and never by the system: the context column
counts the memory the actor was shown (with the run's tokenizer), ingest calls are told from answer calls by stage,
and a retrieval system's ranking is checked and graded against the gold as LongMemEval's retrieval evaluation
grades it (recall@k, NDCG@k; abstention questions left out, as there). The system sees only the gold-free views
(:mod:`om_eval.memory.view`), and must leave its memory as ``ingest`` built it.
"""

from __future__ import annotations

import asyncio
import json
import tomllib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar

from om_eval.bench.answer import ask_actor, ask_actor_with_tools
from om_eval.bench.tool_loop import steps_json
from om_eval.bench.trace import EvidenceTrace
from om_eval.common.files import short_hash
from om_eval.common.recent import by_identity
from om_eval.common.secrets import scrub_secrets
from om_eval.data.records import HaystackSession, Question, Turn
from om_eval.llm.models import chat_window
from om_eval.memory.system import MemoryContext, MemorySystemBase, TurnTrace
from om_eval.memory.view import HistoryView, QuestionView, SessionView, question_view, turn_id_of
from om_eval.om.config import ModelSettings
from om_eval.om.prompts import fill, text_hash
from om_eval.om.tokens import TokenCounter

if TYPE_CHECKING:
    from om_eval.bench.judging.judge import AnswerAndJudgeClient
    from om_eval.bench.pipeline import QuestionRun

#: The k of the retrieval metrics kept with every answer (upstream's list).
RETRIEVAL_KS = (1, 3, 5, 10, 30, 50)
#: Ranked ids kept per answer: enough for recall@50.
KEPT_RANKING = 50
#: Ids named in an error about a ranking (the rest are counted).
NAMED_IDS = 5


class SeamError(RuntimeError):
    """A memory system broke the seam's contract on one question (a ranking it cannot have made, a memory it
    changed): the question is an error, never a score."""


T = TypeVar("T")


async def system_call(call: Awaitable[T], *, system: str, what: str, timeout: float | None = None) -> T:
    """Await one call into a memory system (``ingest``, ``restore``, ``context``), contained to its question.

    Whatever the system raises becomes an error of this question, ``SystemExit`` and a stray ``CancelledError``
    included: only a real interrupt (Ctrl-C, or this task being cancelled) goes on to stop the run. ``timeout``
    (``run.question_timeout_s``) bounds the call; a system that blocks the event loop without awaiting cannot be
    stopped from inside it, and a blocked thread of ``run_sync`` is left to finish on its own.
    """
    deadline = asyncio.timeout(timeout)
    try:
        async with deadline:
            return await call
    except TimeoutError:
        if not deadline.expired():
            raise  # the system's own timeout (a socket's, its own wait_for): its error, as it raised it
        raise SeamError(f"memory={system}: {what}() took longer than run.question_timeout_s={timeout:g} s") from None
    except (Exception, KeyboardInterrupt):
        raise
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # this task is being cancelled: an interrupt, not the system's doing
        raise SeamError(f"memory={system}: {what}() raised CancelledError without being cancelled") from None
    except BaseException as error:  # SystemExit, GeneratorExit...: the system's, never the run's
        raise SeamError(f"memory={system}: {what}() raised {type(error).__name__}: {error}") from error


@lru_cache(maxsize=1)
def seam_actor_prompts() -> dict[str, Any]:
    return tomllib.loads(resources.files("om_eval.bench.prompts").joinpath("seam_actor.toml").read_text("utf-8"))


def seam_actor_prompt_hash() -> str:
    """Identity of the harness's actor layout for text blocks (its exact bytes)."""
    return short_hash(resources.files("om_eval.bench.prompts").joinpath("seam_actor.toml").read_bytes())


def house_messages(memory: str | None, question: Question | QuestionView) -> list[dict[str, str]]:
    """The harness's actor prompt around a text block: instructions, the memory (when any), date and question."""
    prompts = seam_actor_prompts()
    shown = [{"role": "system", "content": fill(prompts["memory"], memory=memory)}] if memory else []
    return [
        {"role": "system", "content": prompts["instructions"]},
        *shown,
        {"role": "user", "content": fill(prompts["question"], question_date=question.question_date_text,
                                         question=question.question)},
    ]


@dataclass(frozen=True)
class SystemBuild:
    """A memory a system built for one history, shared by the questions that ask about it."""

    memory: Any
    key: str
    reused: bool
    turns: str | None = None
    """The turn table the system recorded while it built the memory (JSON), if it recorded one."""
    digest: str | None = None
    """:meth:`~om_eval.memory.system.MemorySystemBase.memory_digest` of the memory as ingest left it."""
    figures: Mapping[str, Any] | None = None
    """:meth:`~om_eval.memory.system.MemorySystemBase.build_figures` of the memory, taken once per build (``None``:
    not taken; asked when answering)."""
    scratch: Any = field(default=None, compare=False, repr=False)
    """The memory's scratch folder (a ``Path``; ``None``: none was lent), removed once the memory is closed."""
    traces: dict[str, TurnTrace] = field(default_factory=dict, compare=False, repr=False)
    """Where every turn went (:meth:`~om_eval.memory.system.MemorySystemBase.trace_turns`), once asked, for a
    memory questions share (the same dict in every copy handed to them)."""


#: Figures of a system's :meth:`~om_eval.memory.system.MemorySystemBase.build_figures` that have columns of their
#: own in ``items`` (OM's, older than the seam); the rest go to ``items.detail``.
FIGURE_COLUMNS = ("observer_calls", "reflector_calls", "observations", "reflections", "history_tokens",
                  "observation_tokens", "pending_tokens", "compression_ratio", "observed_message_tokens",
                  "observation_cycles")


#: Where a build's warnings (:meth:`~om_eval.memory.system.MemorySystemBase.build_warnings`) go among its figures.
BUILD_WARNINGS = "build_warnings"


def build_figures_of(system: MemorySystemBase, memory: Any) -> dict[str, Any]:
    """A built memory's figures, with its warnings under :data:`BUILD_WARNINGS` when it has any."""
    figures = dict(system.build_figures(memory))
    warnings = [scrub_secrets(str(w)) for w in system.build_warnings(memory)]  # a library's warning may quote a key
    if warnings:
        figures[BUILD_WARNINGS] = warnings
    return figures


def figure_columns(figures: Mapping[str, Any]) -> dict[str, Any]:
    """The figures of ``figures`` that fill columns of their own (:data:`FIGURE_COLUMNS`)."""
    return {name: figures[name] for name in FIGURE_COLUMNS if name in figures}


#: The answer figure (:attr:`~om_eval.memory.system.MemoryContext.detail`) with a column of its own.
ANSWER_COLUMNS = ("raw_tail_tokens",)


def as_context(value: MemoryContext | str | None) -> MemoryContext:
    """A system's answer to ``context`` as a :class:`MemoryContext` (a plugin may return a plain text block),
    checked before the actor is paid for: a malformed field is named now, not after the answer."""
    if value is None or isinstance(value, str):
        return MemoryContext(memory=value)
    if not isinstance(value, MemoryContext):
        raise TypeError(f"a memory system's context() returned {type(value).__name__}; return a str or a "
                        "MemoryContext")
    problems = []
    if value.memory is not None and not isinstance(value.memory, str):
        problems.append("memory must be a str")
    if value.messages is not None and not all(isinstance(m, Mapping) and {"role", "content"} <= set(m)
                                              for m in value.messages):
        problems.append("messages must be mappings with a role and a content")
    for name in ("ranked_ids", "corpus_ids", "shown_ids"):
        ids = getattr(value, name)
        if ids is not None and (isinstance(ids, str) or not all(isinstance(i, str) for i in ids)):
            problems.append(f"{name} must be a sequence of str ids")
    if not isinstance(value.documents, Mapping) or any(
            isinstance(turns, str) or not all(isinstance(t, str) for t in turns) for turns in value.documents.values()):
        problems.append("documents must map each document id to a tuple of turn ids")
    if not isinstance(value.detail, Mapping):
        problems.append("detail must be a mapping")
    if problems:
        raise TypeError("a memory system's context() returned a MemoryContext whose " + "; ".join(problems))
    return value


@by_identity(maxsize=256)  # a shared history's sessions are the same views for each of its questions
def session_tokens(session: SessionView, counter: TokenCounter) -> int:
    """The tokens of ``session``'s turns, as ``counter`` counts them."""
    return sum(counter.count_text(t.content) for t in session.turns)


def _plain(text: str) -> str:
    """Text as compared for the question: case and runs of whitespace do not count."""
    return " ".join(text.split()).casefold()


def asks(content: str, question: str) -> bool:
    """Whether ``content`` holds ``question`` once both are :func:`_plain`. Text holding the question verbatim holds
    it plain too (case folding and whitespace runs work character by character), so that cheap test comes first: the
    memory's message is long."""
    return question in content or _plain(question) in _plain(content)


def actor_input(context: MemoryContext, question: Question | QuestionView, counter: TokenCounter
                ) -> tuple[list[dict[str, str]], int]:
    """The actor's messages and the tokens of the memory among them (the context column)."""
    if context.messages is not None:
        messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in context.messages]
        # The question is usually the last message: looked for there first.
        if not any(asks(m["content"], question.question) for m in reversed(messages)):
            said = "no messages" if not messages else "messages without the question"
            raise SeamError(f"a memory system's context() gave the actor {said}: an answer to it would be graded "
                            "against a question it was never asked")
        injected = context.injected if context.injected is not None else "".join(m["content"] for m in messages)
        return messages, counter.count_text(injected)
    memory = context.memory or ""
    return house_messages(memory, question), counter.count_text(memory) if memory else 0


# -- grading a ranking --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GradedRanking:
    """A checked ranking and its gold: what :func:`retrieval_record` stores and scores."""

    ranked: tuple[str, ...]
    corpus: tuple[str, ...]
    correct: tuple[str, ...]
    """The corpus ids that hold evidence, in corpus order."""
    holds: Mapping[str, tuple[tuple[int, int], ...]]
    """The (session index, turn position) of every turn each id holds."""


@dataclass(frozen=True)
class CheckedRanking:
    """A ranking :func:`check_ranking` accepted, with what each of its ids holds."""

    ranked: tuple[str, ...]
    corpus: tuple[str, ...]
    holds: Mapping[str, tuple[tuple[int, int], ...]]
    """The (session index, turn position) of every turn each id holds."""
    turns: frozenset[str]
    """The ids that are a turn ranked by its own id (graded turn by turn, not as a document)."""


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:NAMED_IDS])
    return shown + (f" and {len(ids) - NAMED_IDS} more" if len(ids) > NAMED_IDS else "")


def _repeated(ids: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    twice = []
    for i in ids:
        if i in seen:
            twice.append(i)
        seen.add(i)
    return twice


def check_ranking(system: str, context: MemoryContext, history: HistoryView) -> CheckedRanking:
    """The ranking, the corpus and the turns each id holds, once the ranking is one the system can have made.

    Raises:
        SeamError: an id twice in the ranking or the corpus, a ranked id outside the corpus, or an id that is no
            turn, session or listed document of the history (each named).
    """
    ranked = tuple(context.ranked_ids or ())
    corpus = tuple(context.corpus_ids) if context.corpus_ids is not None else _default_corpus(ranked, history)
    if repeated := _repeated(ranked):
        raise SeamError(f"memory={system} ranked {_named(repeated)} more than once: a ranking names each document "
                        "once")
    if repeated := _repeated(corpus):
        raise SeamError(f"memory={system} listed {_named(repeated)} more than once in corpus_ids")
    searched = set(corpus)
    if outside := [i for i in ranked if i not in searched]:
        raise SeamError(f"memory={system} ranked {_named(outside)}, not among the {len(corpus)} corpus_ids it "
                        "searched")
    turns = {t.id: (s.index, position) for s in history.sessions for position, t in enumerate(s.turns)}
    sessions = {s.id: tuple((s.index, position) for position in range(len(s.turns))) for s in history.sessions}
    holds: dict[str, tuple[tuple[int, int], ...]] = {}
    single: set[str] = set()
    unknown: list[str] = []
    for doc in corpus:
        if doc in context.documents:
            members = context.documents[doc]
            if strangers := [t for t in members if t not in turns]:
                raise SeamError(f"memory={system}: its document {doc!r} holds {_named(strangers)}, which are not "
                                "turn ids of the history")
            holds[doc] = tuple(turns[t] for t in members)
        elif doc in turns:
            holds[doc] = (turns[doc],)
            single.add(doc)
        elif doc in sessions:
            holds[doc] = sessions[doc]
        else:
            unknown.append(doc)
    if unknown:
        raise SeamError(f"memory={system} ranked or searched {_named(unknown)}, which name no turn or session of the "
                        "history: use the view's ids (TurnView.id, SessionView.id), or list a document's turns in "
                        "MemoryContext.documents")
    return CheckedRanking(ranked, corpus, holds, frozenset(single))


def _default_corpus(ranked: tuple[str, ...], history: HistoryView) -> tuple[str, ...]:
    """What a ranking without ``corpus_ids`` searched: every session of the history when it ranks sessions, every turn
    when it ranks turns (so evidence it left unranked counts as missed), else the ranking itself."""
    chosen = set(ranked)
    for ids in ([s.id for s in history.sessions], [t.id for s in history.sessions for t in s.turns]):
        if chosen and chosen <= set(ids):
            return (*ranked, *(i for i in ids if i not in chosen))
    return ranked


def _upstream_rule(question: Question) -> bool:
    """LongMemEval names its evidence sessions ``answer_...``: its documents are graded by upstream's id rule."""
    return any("answer" in s.session_id for s in question.sessions)


def _document_is_evidence(question: Question, held: Sequence[tuple[int, int]], by_upstream: bool,
                          sessions: Mapping[int, Any]) -> bool:
    """A document holds evidence: by upstream's rule (a user turn marked ``has_answer`` in a session named
    ``answer``; every user turn of such a session must be marked, as upstream asserts), or else any turn it holds
    marked ``has_answer`` (LoCoMo's evidence turns)."""
    found = False
    for index, position in held:
        session = sessions[index]
        turn: Turn = session.turns[position]
        if not by_upstream:
            found = found or bool(turn.has_answer)
        elif turn.role == "user" and "answer" in session.session_id:
            if turn.has_answer is None:
                raise ValueError(f"question {question.question_id}: session {session.session_id!r} (index "
                                 f"{session.index}) is an evidence session (its id contains 'answer') but one of its "
                                 "user turns has no has_answer")
            found = found or turn.has_answer
    return found


def grade_ranking(system: str, context: MemoryContext, question: Question, history: HistoryView) -> GradedRanking:
    """Check ``context``'s ranking (:func:`check_ranking`) and find its evidence ids from the gold.

    A turn ranked by its own id is evidence when it is marked ``has_answer``. A session, or a document of the
    system's own, is graded as LongMemEval grades a document: :func:`_document_is_evidence`.
    """
    checked = check_ranking(system, context, history)
    by_upstream = _upstream_rule(question)
    sessions = {s.index: s for s in question.sessions}
    correct = []
    for doc in checked.corpus:
        if doc in checked.turns:
            index, position = checked.holds[doc][0]
            evidence = bool(sessions[index].turns[position].has_answer)
        else:
            evidence = _document_is_evidence(question, checked.holds[doc], by_upstream, sessions)
        if evidence:
            correct.append(doc)
    return GradedRanking(checked.ranked, checked.corpus, tuple(correct), checked.holds)


def retrieval_record(graded: GradedRanking | None, question: Question, top_k: int | None) -> str | None:
    """JSON of a ranking and its recall@k / NDCG@k (``None``: the system retrieves nothing)."""
    if graded is None:
        return None
    ranked, correct, corpus = list(graded.ranked), list(graded.correct), list(graded.corpus)
    record: dict[str, Any] = {"k": top_k, "ranked": ranked[:KEPT_RANKING], "correct": correct, "corpus": len(corpus)}
    # Upstream leaves abstention questions out (no evidence to find), and a question without evidence ids too.
    if not question.is_abstention and correct:
        from om_eval.bench.retrieval import evaluate_retrieval

        index = {doc: i for i, doc in enumerate(corpus)}
        rankings = [index[doc] for doc in ranked]
        metrics = {}
        for k in RETRIEVAL_KS:
            recall_any, recall_all, ndcg_any = evaluate_retrieval(rankings, correct, corpus, k)
            metrics[f"recall_any@{k}"], metrics[f"recall_all@{k}"] = recall_any, recall_all
            metrics[f"ndcg_any@{k}"] = ndcg_any
        record["metrics"] = metrics
    return json.dumps(record, ensure_ascii=False)


def retrieval_traces(graded: GradedRanking, question: Question, top_k: int | None) -> list[EvidenceTrace]:
    """Where each evidence turn went: ``retrieved`` when a document holding it is among the top k, else
    ``not_retrieved``."""
    top = graded.ranked[:top_k] if top_k else graded.ranked
    held_by_top = {turn for doc in top for turn in graded.holds[doc]}
    return _evidence_traces(question, lambda session, position: (
        "retrieved" if (session.index, position) in held_by_top else "not_retrieved", (), False))


def _evidence_traces(question: Question,
                     fate: Callable[[HaystackSession, int], tuple[str, tuple[str, ...], bool]]) -> list[EvidenceTrace]:
    """One trace per evidence turn, in the question's order, with the status, the matching lines and the
    answer-kept flag ``fate`` gives the turn at ``(session, position)``."""
    traces = []
    for session in question.sessions:
        for position, turn in enumerate(session.turns):
            if turn.has_answer:
                status, lines, answer_kept = fate(session, position)
                traces.append(EvidenceTrace(session.session_id, session.index, position, turn.role,
                                            " ".join(turn.content.split())[:160], status, lines, answer_kept))
    return traces


def untraced(question: Question) -> list[EvidenceTrace]:
    """The evidence turns of a system that says nothing of where turns went: listed, each ``not_traced``."""
    return _evidence_traces(question, lambda session, position: ("not_traced", (), False))


def evidence_turn_ids(question: Question) -> list[str]:
    """The view's ids of the question's evidence turns."""
    return [turn_id_of(s, p) for s in question.sessions for p, t in enumerate(s.turns) if t.has_answer]


def system_traces(system: MemorySystemBase, build: SystemBuild, question: Question, history: HistoryView
                  ) -> list[EvidenceTrace]:
    """Where each evidence turn went, as the system traces it (:meth:`~MemorySystemBase.trace_turns`). Asked once
    the answer is graded; a memory questions share is asked about every turn at once (kept with the build), so no
    question's evidence is named to a memory that answers others."""
    if question.haystack_id:
        if not build.traces:
            every = [t.id for s in history.sessions for t in s.turns]
            build.traces.update(system.trace_turns(build.memory, history, every))
        traced: Mapping[str, TurnTrace] = build.traces
    else:
        traced = system.trace_turns(build.memory, history, evidence_turn_ids(question))
    answer = question.answer_text.lower()

    def fate(session: HaystackSession, position: int) -> tuple[str, tuple[str, ...], bool]:
        trace = traced.get(turn_id_of(session, position))
        if trace is None:
            return "not_traced", (), False
        lines = tuple(trace.lines)
        return trace.status, lines, any(answer in line.lower() for line in lines)

    return _evidence_traces(question, fate)


def check_shown(system: str, shown_ids: Sequence[str], history: HistoryView) -> None:
    """Refuse shown turn ids that are no turn of the history the system was given (each named)."""
    turns = {t.id for s in history.sessions for t in s.turns}
    if strangers := [i for i in shown_ids if i not in turns]:
        raise SeamError(f"memory={system} says it showed {_named(strangers)}, which are not turn ids of the history "
                        "it was given (TurnView.id)")


def shown_traces(shown_ids: Sequence[str], question: Question, history: HistoryView) -> list[EvidenceTrace]:
    """Where each evidence turn went for a system that shows raw turns: ``in_reader_prompt`` when it showed the turn
    whole (with whether the turn holds the answer's words), else ``truncated_away`` (cut, or never given)."""
    from om_eval.bench.baseline import IN_READER_PROMPT, TRUNCATED_AWAY

    shown = set(shown_ids)
    answer = question.answer_text.lower()

    def fate(session: HaystackSession, position: int) -> tuple[str, tuple[str, ...], bool]:
        if turn_id_of(session, position) not in shown:
            return TRUNCATED_AWAY, (), False
        return IN_READER_PROMPT, (), answer in session.turns[position].content.lower()

    return _evidence_traces(question, fate)


# -- answering ----------------------------------------------------------------------------------------------------


def checked_unchanged(system: MemorySystemBase, build: SystemBuild) -> None:
    """Fail the question if answering it changed the memory (a shared memory's answers would depend on question
    order, and a reused one would not be the memory its key names)."""
    if build.digest is not None and system.memory_digest(build.memory) != build.digest:
        raise SeamError(f"memory={system.name} changed its memory while answering (this question's context(), or "
                        "another's on the same shared memory: context() must leave the memory ingest built as it "
                        "was; keep per-question state elsewhere)")


async def system_answer_and_judge(
    question: Question, system: MemorySystemBase, build: SystemBuild, *, services: Any,
    client: AnswerAndJudgeClient, actor: ModelSettings, judge: Any, counter: TokenCounter,
    history: HistoryView, ingest_calls: Mapping[str, int] | None = None, timeout: float | None = None,
    max_context_tokens: int | None = None,
) -> QuestionRun:
    """Ask ``system`` for the question's context from ``build``, check it, ask the actor, grade the answer.
    ``timeout``: ``run.question_timeout_s`` for the ``context`` call; ``max_context_tokens``: the cap on the memory
    shown (``run.max_context_tokens``; without it, the actor's window in litellm's list)."""
    from om_eval.bench.judging.judge import judge_answer
    from om_eval.bench.pipeline import QuestionRun, pack_messages

    asked = question_view(question, history.id)
    context = as_context(await system_call(system.context(build.memory, asked, services), system=system.name,
                                           what="context", timeout=timeout))
    checked_unchanged(system, build)
    top_k = system.budget().get("top_k")
    k = top_k if isinstance(top_k, int) else None
    graded = grade_ranking(system.name, context, question, history) if context.ranked_ids is not None else None
    if context.shown_ids is not None:
        check_shown(system.name, context.shown_ids, history)
    messages, context_tokens = actor_input(context, asked, counter)
    # A configured cap replaces the listed window: a served model's window is what its server was started with.
    limit = max_context_tokens if max_context_tokens is not None else chat_window(actor.model)
    if limit is not None and context_tokens > limit:
        where = ("run.max_context_tokens" if max_context_tokens is not None
                 else f"the input window of {actor.model} in litellm's list (run.max_context_tokens sets another)")
        raise SeamError(f"memory={system.name} gave the actor {context_tokens:,} tokens of memory, over {where} "
                        f"({limit:,})")
    joined = "\n\u241e\n".join(f"{m['role']}\n{m['content']}" for m in messages)
    steps = None
    if context.tools is not None:
        loop = await ask_actor_with_tools(client, messages, actor, question.question_id, context.tools, counter)
        reply, sent, steps = loop.reply, list(loop.messages), loop.steps
        prompt_tokens, completion_tokens = loop.prompt_tokens, loop.completion_tokens
    else:
        reply = await ask_actor(client, messages, actor, question.question_id)
        sent, prompt_tokens, completion_tokens = messages, reply.prompt_tokens, reply.completion_tokens
    hypothesis = reply.text.strip()
    verdict = await judge_answer(judge, client, question, hypothesis)
    calls = ingest_calls or {}
    # The history the system was given (the oracle reader is given the evidence sessions only).
    history_tokens = sum(session_tokens(s, counter) for s in history.sessions)
    if graded is not None:
        traces = retrieval_traces(graded, question, k)
    elif context.shown_ids is not None:
        traces = shown_traces(context.shown_ids, question, history)
    else:
        traces = system_traces(system, build, question, history) if system.traces_turns else untraced(question)
    # OM's columns stay empty for a system that does not report them: a RAG row has no observations, not zero.
    built = {"history_tokens": history_tokens,
             **{f"{stage}_calls": calls.get(stage, 0) for stage in ("observer", "reflector")
                if system.uses_observer_model},
             **(build.figures if build.figures is not None else build_figures_of(system, build.memory))}
    answered = dict(context.detail)
    columns = {**{name: built.pop(name) for name in FIGURE_COLUMNS if name in built},
               **{name: answered.pop(name) for name in ANSWER_COLUMNS if name in answered}}
    figures = {**built, **answered}
    # A memory of its own is shown with its question; a shared one (LoCoMo) with the question that built it.
    turns = build.turns if not build.reused or not question.haystack_id else None
    return QuestionRun(
        question_id=question.question_id, question_type=question.question_type,
        is_abstention=question.is_abstention, hypothesis=hypothesis, label=verdict.label, score=verdict.score,
        judge_status=verdict.status, judge_reply=verdict.reply, memory_key=build.key, reused_memory=build.reused,
        **columns,
        actor_prompt_tokens=prompt_tokens, actor_completion_tokens=completion_tokens,
        actor_prompt_hash=text_hash(joined), error=verdict.error,
        question=question.question, gold_answer=question.answer_text, question_date=question.question_date_text,
        actor_prompt=pack_messages(sent), evidence=json.dumps([asdict(t) for t in traces], ensure_ascii=False),
        judge_identity=json.dumps(judge.identity, sort_keys=True), judge_official=judge.is_official,
        context_tokens=context_tokens, retrieval=retrieval_record(graded, question, k),
        tool_calls=None if steps is None else len(steps), recall_steps=None if steps is None else steps_json(steps),
        detail=json.dumps(figures, ensure_ascii=False, sort_keys=True, default=str) if figures else None,
        turns=turns if build.turns is not None else _retrieval_turns(system, graded, question, counter,
                                                                       context_tokens),
    )


def _retrieval_turns(system: MemorySystemBase, graded: GradedRanking | None, question: Question,
                     counter: TokenCounter, context_tokens: int | None) -> str | None:
    """For a retrieval system that records no turns of its own: an agent retrieving at every turn, shown as much as
    its answer was (systems that retrieve nothing and record nothing have no table)."""
    if graded is None or not context_tokens:
        return None
    from om_eval.bench.answer import actor_prompts
    from om_eval.bench.history import lived_messages
    from om_eval.bench.turn_costs import retrieval_turns, shared_table

    key = ("retrieval", system.name, question.haystack_id, getattr(counter, "name", "")) \
        if question.haystack_id else None
    return shared_table(key, lambda: retrieval_turns(lived_messages(question), counter,
                                                     actor_prompts()["instructions"], context_tokens))
