"""Reading aids for OM: what the actor saw for a question, and where each evidence turn went.

Each ``has_answer`` turn ends in one of four places:

* ``in_memory``: it was observed and lines carrying its content are in the active observations;
* ``lost_at_reflection``: such lines existed in an earlier generation but a reflection dropped them;
* ``not_captured``: it was observed, but no observation line carries its content (an observer miss);
* ``in_raw_tail``: it was never observed, so the actor reads it raw among the other conversations.

Lines are matched to a turn by shared content words (a line matches when most of its content words occur in the
turn; :func:`~om_eval.bench.trace.matching_lines`); this is a heuristic made for reading, not a metric.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from om_eval.bench.history import thread_id_for
from om_eval.bench.trace import EvidenceTrace, indexed_matches, line_index, matching_lines
from om_eval.data.records import Question
from om_eval.om.memory import ObservationalMemory
from om_eval.om.records import Message
from om_eval.systems.om.replay import ReplayConfig, session_messages


def turn_status(message: Message | None, content: str, unobserved: set[str], active: str, earlier: Sequence[str]
                ) -> tuple[str, list[str]]:
    """Where a turn went (its replayed ``message``, ``None`` when none was kept) and the lines that carry it, given
    the ids never observed, the active observations and earlier generations' texts."""
    return turn_statuses([(None, message, content)], unobserved, active, earlier)[None]


def turn_statuses(turns: Sequence[tuple[Hashable, Message | None, str]], unobserved: set[str], active: str,
                  earlier: Sequence[str]) -> dict[Hashable, tuple[str, list[str]]]:
    """:func:`turn_status` of many ``(key, message, content)`` turns at once, by key. The earlier generations are
    read one at a time, oldest first, each indexed once and let go before the next (a long memory has hundreds);
    a turn takes the first one that carries it, as it would alone."""
    statuses: dict[Hashable, tuple[str, list[str]]] = {}
    pending: list[tuple[Hashable, str]] = []
    for key, message, content in turns:
        if message is None or message.id in unobserved:
            statuses[key] = ("in_raw_tail", [])
        elif lines := matching_lines(active, content):
            statuses[key] = ("in_memory", lines)
        else:
            pending.append((key, content))
    for text in earlier:
        if not pending:
            break
        index = line_index(text)
        left = []
        for key, content in pending:
            if lines := indexed_matches(index, content):
                statuses[key] = ("lost_at_reflection", lines)
            else:
                left.append((key, content))
        pending = left
    for key, _ in pending:
        statuses[key] = ("not_captured", [])
    return statuses


def trace_evidence(question: Question, memory: ObservationalMemory, replay: ReplayConfig | None = None) -> list[
    EvidenceTrace
]:
    """One :class:`EvidenceTrace` per ``has_answer`` turn of ``question``."""
    replay = replay or ReplayConfig()
    unobserved = {m.id for m in memory.unobserved_messages()}
    histories = [memory.generations()] if memory.resource_scope else [memory.generations(t) for t in memory.thread_ids]
    active = "\n".join(history[-1].active_observations for history in histories)
    earlier = [g.active_observations for history in histories for g in history[:-1]]
    found = []
    for session in question.sessions:
        if not any(turn.has_answer for turn in session.turns):
            continue  # most sessions of a long haystack hold no evidence: their messages are not rebuilt
        thread = thread_id_for(session, shown_raw=not memory.config.obscure_thread_ids)
        messages = {m.id.rsplit(":", 1)[-1]: m for m in session_messages(session, replay, thread)}
        found += [(session, turn_index, turn, messages.get(f"{turn_index:04d}"))
                  for turn_index, turn in enumerate(session.turns) if turn.has_answer]
    statuses = turn_statuses([(n, message, turn.content) for n, (_, _, turn, message) in enumerate(found)],
                             unobserved, active, earlier)
    answer = question.answer_text.lower()
    traces = []
    for n, (session, turn_index, turn, _) in enumerate(found):
        status, lines = statuses[n]
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
