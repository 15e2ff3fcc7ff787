"""A question answered through the memory seam: a system's context, the actor, the judge, one results row.

Every system answered here is measured the same way: the context column counts the memory the actor was shown
(with the run's tokenizer), ingest calls are told from answer calls by stage, and a retrieval system's ranking is
scored as LongMemEval's retrieval evaluation scores it (recall@k, NDCG@k; abstention questions left out, as there).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, is_dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from om_eval.bench.answer import ask_actor
from om_eval.common.files import short_hash
from om_eval.data.records import Question
from om_eval.memory.system import MemoryContext, MemorySystem
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


@lru_cache(maxsize=1)
def seam_actor_prompts() -> dict[str, Any]:
    return tomllib.loads(resources.files("om_eval.memory.prompts").joinpath("actor.toml").read_text("utf-8"))


def seam_actor_prompt_hash() -> str:
    """Identity of the harness's actor layout for text blocks (its exact bytes)."""
    return short_hash(resources.files("om_eval.memory.prompts").joinpath("actor.toml").read_bytes())


def house_messages(memory: str | None, question: Question) -> list[dict[str, str]]:
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
    """A memory a system built for one haystack, shared by the questions that ask about it."""

    memory: Any
    key: str
    reused: bool
    turns: str | None = None
    """The turn table the system recorded while it built the memory (JSON), if it recorded one."""


def as_context(value: MemoryContext | str | None) -> MemoryContext:
    """A system's answer to ``context`` as a :class:`MemoryContext` (a plugin may return a plain text block)."""
    if isinstance(value, MemoryContext):
        return value
    if value is None or isinstance(value, str):
        return MemoryContext(memory=value)
    raise TypeError(f"a memory system's context() returned {type(value).__name__}; return a str or a MemoryContext")


def actor_input(context: MemoryContext, question: Question, counter: TokenCounter) -> tuple[list[dict[str, str]], int]:
    """The actor's messages and the tokens of the memory among them (the context column)."""
    if context.messages is not None:
        messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in context.messages]
        injected = context.injected if context.injected is not None else "".join(m["content"] for m in messages)
        return messages, counter.count_text(injected)
    memory = context.memory or ""
    return house_messages(memory, question), counter.count_text(memory) if memory else 0


def retrieval_record(context: MemoryContext, question: Question, top_k: int | None) -> str | None:
    """JSON of a retrieval system's ranking and its recall@k / NDCG@k (``None``: the system retrieves nothing)."""
    if context.ranked_ids is None:
        return None
    ranked = list(context.ranked_ids)
    correct = list(context.correct_ids or ())
    corpus = list(context.corpus_ids or ranked)
    record: dict[str, Any] = {"k": top_k, "ranked": ranked[:KEPT_RANKING], "correct": correct, "corpus": len(corpus)}
    # Upstream leaves abstention questions out (no evidence to find), and a question without evidence ids too.
    if not question.is_abstention and correct:
        from om_eval.bench.retrieval import evaluate_retrieval

        index = {doc: i for i, doc in enumerate(corpus)}
        rankings = [index[doc] for doc in ranked if doc in index]
        metrics = {}
        for k in RETRIEVAL_KS:
            recall_any, recall_all, ndcg_any = evaluate_retrieval(rankings, correct, corpus, k)
            metrics[f"recall_any@{k}"], metrics[f"recall_all@{k}"] = recall_any, recall_all
            metrics[f"ndcg_any@{k}"] = ndcg_any
        record["metrics"] = metrics
    return json.dumps(record, ensure_ascii=False)


def _evidence_json(evidence: tuple[Any, ...]) -> str:
    return json.dumps([asdict(t) if is_dataclass(t) and not isinstance(t, type) else t for t in evidence],
                      ensure_ascii=False)


async def system_answer_and_judge(
    question: Question, system: MemorySystem, build: SystemBuild, *, services: Any, client: AnswerAndJudgeClient,
    actor: ModelSettings, judge: Any, counter: TokenCounter, ingest_calls: Mapping[str, int] | None = None,
) -> QuestionRun:
    """Ask ``system`` for the question's context from ``build``, ask the actor, grade the answer."""
    from om_eval.bench.judging.judge import judge_answer
    from om_eval.bench.pipeline import QuestionRun, pack_messages

    context = as_context(await system.context(build.memory, question, services))
    messages, context_tokens = actor_input(context, question, counter)
    reply = await ask_actor(client, messages, actor, question.question_id)
    hypothesis = reply.text.strip()
    verdict = await judge_answer(judge, client, question, hypothesis)
    joined = "\n\u241e\n".join(f"{m['role']}\n{m['content']}" for m in messages)
    calls = ingest_calls or {}
    history = sum(counter.count_text(t.content) for s in question.sessions for t in s.turns)
    top_k = system.budget().get("top_k")
    return QuestionRun(
        question_id=question.question_id, question_type=question.question_type,
        is_abstention=question.is_abstention, hypothesis=hypothesis, label=verdict.label,
        judge_status=verdict.status, judge_reply=verdict.reply, memory_key=build.key, reused_memory=build.reused,
        observer_calls=calls.get("observer", 0), reflector_calls=calls.get("reflector", 0), observations=0,
        reflections=0, history_tokens=history, observation_tokens=None, pending_tokens=None, compression_ratio=None,
        actor_prompt_tokens=reply.prompt_tokens, actor_completion_tokens=reply.completion_tokens,
        actor_prompt_hash=text_hash(joined), error=verdict.error, question=question.question,
        gold_answer=question.answer_text, question_date=question.question_date_text,
        actor_prompt=pack_messages(messages), evidence=_evidence_json(context.evidence),
        judge_identity=json.dumps(judge.identity, sort_keys=True), judge_official=judge.is_official,
        context_tokens=context_tokens,
        retrieval=retrieval_record(context, question, top_k if isinstance(top_k, int) else None),
        turns=build.turns if build.turns is not None else _retrieval_turns(system, context, question, counter,
                                                                             context_tokens),
    )


def _retrieval_turns(system: MemorySystem, context: MemoryContext, question: Question, counter: TokenCounter,
                     context_tokens: int | None) -> str | None:
    """For a retrieval system that records no turns of its own: an agent retrieving at every turn, shown as much as
    its answer was (systems that retrieve nothing and record nothing have no table)."""
    if context.ranked_ids is None or not context_tokens:
        return None
    from om_eval.bench.answer import actor_prompts
    from om_eval.bench.replay import haystack_messages
    from om_eval.bench.turn_costs import retrieval_turns, shared_table

    key = ("retrieval", system.name, question.haystack_id, getattr(counter, "name", "")) \
        if question.haystack_id else None
    return shared_table(key, lambda: retrieval_turns(haystack_messages(question), counter,
                                                     actor_prompts()["instructions"], context_tokens))
