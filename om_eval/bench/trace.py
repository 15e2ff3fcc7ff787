"""Reading aids: what the actor saw for a question, and where each evidence turn went.

Each ``has_answer`` turn ends in one of four places:

* ``in_memory``: it was observed and lines carrying its content are in the active observations;
* ``lost_at_reflection``: such lines existed in an earlier generation but a reflection dropped them;
* ``not_captured``: it was observed, but no observation line carries its content (an observer miss);
* ``in_raw_tail``: it was never observed, so the actor reads it raw among the other conversations.

Lines are matched to a turn by shared content words (a line matches when most of its content words occur in the
turn); this is a heuristic made for reading, not a metric.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from om_eval.bench.replay import ReplayConfig, session_messages, thread_id_for
from om_eval.data.records import Question
from om_eval.om.memory import ObservationalMemory
from om_eval.om.records import Message

_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset(
    "a an the i me my you your we our is are was were be been am do did does to of in on at for with and or but "
    "it its that this there as by from about have has had will would can could should user stated asked said "
    "assistant replied".split()
)
MIN_SHARED_WORDS = 3
MIN_LINE_COVERAGE = 0.6


@lru_cache(maxsize=65536)
def _words(text: str) -> frozenset[str]:
    # Cached: a memory's observation lines are matched again for every question asked of it (a LoCoMo
    # conversation's memory answers ~200 questions).
    return frozenset(w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP)


@lru_cache(maxsize=8)  # a shared memory's active and earlier texts; an index costs about ten times its text
def _line_index(observations: str) -> tuple[list[tuple[str, frozenset[str]]], dict[str, list[int]]]:
    """The text's lines that have content words, and for each word the lines holding it. Cached: every question
    of a shared memory traces its evidence through the same observations."""
    lines: list[tuple[str, frozenset[str]]] = []
    holders: dict[str, list[int]] = {}
    for line in observations.splitlines():
        words = _words(line)
        if words:
            for word in words:
                holders.setdefault(word, []).append(len(lines))
            lines.append((line.strip(), words))
    return lines, holders


def matching_lines(observations: str, content: str, limit: int = 3) -> list[str]:
    """Observation lines whose content words mostly occur in ``content``, best first (ties in text order)."""
    lines, holders = _line_index(observations)
    shared_by_line: dict[int, int] = {}
    for word in _words(content):
        for index in holders.get(word, ()):
            shared_by_line[index] = shared_by_line.get(index, 0) + 1
    scored = []
    for index in sorted(i for i, shared in shared_by_line.items() if shared >= MIN_SHARED_WORDS):
        line, words = lines[index]
        shared = shared_by_line[index]
        if shared / len(words) >= MIN_LINE_COVERAGE:
            scored.append((shared / len(words), shared, line))
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [line for _, _, line in scored[:limit]]


@dataclass(frozen=True)
class EvidenceTrace:
    """Where one evidence turn went."""

    session_id: str
    session_index: int
    turn_index: int
    role: str
    excerpt: str
    status: str
    lines: tuple[str, ...]
    """Matching lines of the active observations (``in_memory``) or of the generation that lost them."""
    answer_in_lines: bool
    """The gold answer's text occurs in those lines (False also means: only part of the turn was kept)."""


def turn_status(message: Message | None, content: str, unobserved: set[str], active: str, earlier: list[str]
                ) -> tuple[str, list[str]]:
    """Where a turn went (its replayed ``message``, ``None`` when none was kept) and the lines that carry it, given
    the ids never observed, the active observations and earlier generations' texts."""
    lines: list[str] = []
    if message is None or message.id in unobserved:
        return "in_raw_tail", lines
    if lines := matching_lines(active, content):
        return "in_memory", lines
    for text in earlier:
        if lines := matching_lines(text, content):
            return "lost_at_reflection", lines
    return "not_captured", []


def trace_evidence(question: Question, memory: ObservationalMemory, replay: ReplayConfig | None = None) -> list[
    EvidenceTrace
]:
    """One :class:`EvidenceTrace` per ``has_answer`` turn of ``question``."""
    replay = replay or ReplayConfig()
    unobserved = {m.id for m in memory.unobserved_messages()}
    histories = [memory.generations()] if memory.resource_scope else [memory.generations(t) for t in memory.thread_ids]
    active = "\n".join(history[-1].active_observations for history in histories)
    earlier = [g.active_observations for history in histories for g in history[:-1]]
    traces = []
    for session in question.sessions:
        if not any(turn.has_answer for turn in session.turns):
            continue  # most sessions of a long haystack hold no evidence: their messages are not rebuilt
        thread = thread_id_for(session, shown_raw=not memory.config.obscure_thread_ids)
        messages = {m.id.rsplit(":", 1)[-1]: m for m in session_messages(session, replay, thread)}
        for turn_index, turn in enumerate(session.turns):
            if not turn.has_answer:
                continue
            status, lines = turn_status(messages.get(f"{turn_index:04d}"), turn.content, unobserved, active, earlier)
            answer = question.answer_text.lower()
            traces.append(EvidenceTrace(
                session.session_id, session.index, turn_index, turn.role, " ".join(turn.content.split())[:160],
                status, tuple(lines), any(answer in line.lower() for line in lines),
            ))
    return traces


def render_question_report(question: Question, memory: ObservationalMemory, actor_messages: list[dict[str, str]],
                           hypothesis: str | None = None, label: bool | None = None) -> str:
    """Markdown: the question, what the actor saw, and where the evidence went."""
    lines = [
        f"# {question.question_id} ({question.question_type}{', abstention' if question.is_abstention else ''})",
        "",
        f"**Question** ({question.question_date_text}): {question.question}",
        f"**Gold answer**: {question.answer_text}",
    ]
    if hypothesis is not None:
        lines.append(f"**Hypothesis**: {hypothesis}")
    if label is not None:
        lines.append(f"**Judged**: {'correct' if label else 'wrong'}")
    lines += ["", "## Where the evidence went", "",
              "| session | turn | role | status | answer kept | matching lines |", "|---|---|---|---|---|---|"]
    for trace in trace_evidence(question, memory):
        matched = "<br>".join(trace.lines) or "–"
        kept = "yes" if trace.answer_in_lines else "no"
        lines.append(
            f"| {trace.session_index} | {trace.turn_index} | {trace.role} | {trace.status} | {kept} | {matched} |"
        )
    lines += ["", "## What the actor saw", ""]
    for message in actor_messages:
        lines += [f"### {message['role']}", "", "```", message["content"], "```", ""]
    return "\n".join(lines)
