"""``om-eval show``: one question of one run in the terminal, from the question to the judge's reply.

Long texts (an S-sized actor prompt is ~100k tokens) are cut to their first and last lines unless ``full`` is
asked for; the cut says how many lines it left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from om_eval.bench.benchmark import benchmark_of_run

__all__ = ["render_detail", "verdict_text"]

_CUT_LINES = 40
#: OM events worth a line of their own: observer calls that failed, or whose kept reply looked like a repeat of
#: earlier observations (:mod:`om_eval.om.suspect`).
OBSERVER_WARNINGS = ("observation_suspect", "observation_failed", "observation_buffer_failed")


def _rubric_detail(console: Any, item: Mapping[str, Any]) -> bool:
    """A rubric judge's reply as a table of its items (and an event ordering's alignment); ``False`` when the reply
    is not one (an unjudged question's)."""
    from rich.markup import escape
    from rich.table import Table

    try:
        detail = json.loads(item.get("judge_reply") or "")
    except ValueError:
        return False
    if not isinstance(detail, dict) or not isinstance(detail.get("items"), list):
        return False
    table = Table(title=f"Rubric (rounding {detail.get('rounding', '?')})", title_justify="left")
    for column in ("criterion", "score", "reason"):
        table.add_column(column, justify="right" if column == "score" else "left")
    for entry in detail["items"]:
        table.add_row(escape(str(entry.get("criterion"))), f"{entry.get('score'):g}", escape(str(entry.get("reason"))))
    console.print(table)
    if ordering := detail.get("ordering"):
        figures = " · ".join(f"{k} {'undefined' if v is None else f'{v:.3f}'}" for k, v in ordering.items()
                             if k != "aligned")
        console.print(f"[bold]Event ordering[/bold]: {figures}")
        console.print("aligned answer lines: " + escape(" | ".join(str(a) for a in ordering.get("aligned", []))))
    return True


def verdict_text(label: Any, status: str | None) -> str:
    if status not in (None, "ok"):
        return f"not graded ({status})"
    return "correct" if label else "wrong" if label is not None else "not graded"


def _cut(text: str, full: bool, keep: int = _CUT_LINES) -> str:
    lines = text.splitlines()
    if full or len(lines) <= keep:
        return text
    head, tail = lines[: keep // 2], lines[-keep // 2:]
    return "\n".join([*head, f"… {len(lines) - len(head) - len(tail)} lines left out (--full shows them) …", *tail])


def render_detail(detail: Mapping[str, Any], console: Any, *, full: bool = False) -> None:
    """Print a :func:`om_eval.report.detail.question_detail` result on a rich console."""
    from rich.markup import escape
    from rich.rule import Rule
    from rich.table import Table

    run, item = detail["run"], detail["item"]
    benchmark = benchmark_of_run(run)
    try:
        category = benchmark.category(item["question_type"]).title
    except KeyError:
        category = str(item["question_type"])
    abstention = ", abstention" if item["is_abstention"] and benchmark.abstention_row else ""
    console.print(Rule(f"[bold]{escape(item['question_id'])}[/bold] ({escape(category)}{abstention}) · run "
                       f"{run['run_id'][:12]} · {escape(str(run['label']))}"))
    console.print(f"[bold]Question[/bold] ({escape(str(item['question_date']))}): {escape(str(item['question']))}")
    trap = " (the trap answer: the question cannot be answered)" if item["is_abstention"] and not \
        benchmark.abstention_row else ""
    console.print(f"[bold]Gold answer[/bold]{trap}: {escape(str(item['gold_answer']))}")
    if item.get("corrected_answer") is not None:
        console.print(f"[bold]Corrected gold[/bold] (dataset.corrections): {escape(str(item['corrected_answer']))}")
    console.print(f"[bold]Answer[/bold] ({escape(str(run['actor_model']))}): {escape(str(item['hypothesis']))}")
    verdict = verdict_text(item['label'], item['judge_status'])
    if benchmark.verdict_name != "accuracy" and item["judge_status"] == "ok":
        verdict = f"{benchmark.verdict_name}: {'yes' if item['label'] else 'no'}"
    console.print(f"[bold]Verdict[/bold] ({run['judge_mode']}:{escape(str(run['judge_model']))}): {verdict}"
                  + (f" · error: {escape(str(item['error']))}" if item.get("error") else ""))
    if benchmark.own_means is None or not _rubric_detail(console, item):  # a rubric judge's reply: item by item
        console.print(f"[bold]Judge reply[/bold]: {escape(str(item['judge_reply']))}")
    if benchmark.own_means is not None and item.get("score") is not None:
        score = item["score"]
        console.print(f"[bold]{benchmark.title} score[/bold]: "
                      + ("undefined (Kendall tau-b is NaN: a constant rank vector)" if math.isnan(score)
                         else f"{score:.3f}"))
    elif benchmark.own_score is not None and item.get("score") is not None:
        fixed = "" if item.get("corrected_answer") is None else (
            f" · against the corrected gold: {item['corrected_score']:.3f}, verdict "
            f"{verdict_text(item.get('corrected_label'), 'error' if item.get('corrected_label') is None else 'ok')}")
        console.print(f"[bold]{benchmark.title} {benchmark.own_score}[/bold]: {item['score']:.3f}{fixed}")
    if item.get("haystack_id"):
        console.print(f"memory shared by every question of {escape(str(item['haystack_id']))}")
    built = "reused" if item["reused_memory"] else "built"
    # OM's figures are shown for a system that reported them (observation tokens), whatever its name.
    observes = item.get("observation_tokens") is not None
    if observes:
        console.print(f"memory {item['memory_key']} ({built}): "
                      f"{item['observations']} observation and {item['reflections']} reflection calls · history "
                      f"{item['history_tokens']} tokens → observations {item['observation_tokens']} · unobserved "
                      f"tail {item['pending_tokens']}")
        calls, observed = item.get("observer_calls"), item.get("observed_message_tokens")
        per_call = f"{observed / calls:,.0f}" if calls and observed else "?"
        raw_tail = item.get("raw_tail_tokens")
        console.print(f"observer: {calls if calls is not None else '?'} calls, {per_call} message tokens per call · "
                      f"raw messages shown to the actor: {'?' if raw_tail is None else f'{raw_tail:,}'} tokens")
    if not observes or item.get("system_figures"):
        console.print(system_line(str(run["memory_system"]), item, built))
    if item.get("context_tokens") is not None:
        console.print(f"memory shown to the actor: {item['context_tokens']:,} tokens")
    if item.get("retrieval"):
        console.print(f"retrieval: {escape(str(item['retrieval']))}")

    console.print(Rule("Where the evidence went"))
    evidence = detail["evidence"]
    if evidence is None:
        console.print("(not stored for this run: it was made before om-eval kept evidence traces)")
    elif not evidence:
        console.print("(the question has no evidence turns marked has_answer)")
    else:
        table = Table(show_lines=False)
        for name in ("session", "turn", "role", "where it went", "answer kept", "matching lines / excerpt"):
            table.add_column(name)
        for trace in evidence:
            shown = "\n".join(trace["lines"]) or f"[dim]{escape(trace['excerpt'])}[/dim]"
            kept = "–" if trace["status"] == "not_traced" else "yes" if trace["answer_in_lines"] else "no"
            table.add_row(str(trace["session_index"]), str(trace["turn_index"]), trace["role"], trace["status_text"],
                          kept, shown)
        console.print(table)

    if observes:
        _render_om_memory(detail, console, full)
    _render_actor_view(detail, console, full)


def system_line(system: str, item: Mapping[str, Any], built: str) -> str:
    """A system's own figures for one answer (``items.detail``), with the memory it was answered from.

    >>> system_line("rag_mastra", {"memory_key": "rag_mastra:ab-cd", "history_tokens": 120,
    ...                            "system_figures": "hits 3 · shown messages 9"}, "built")
    'memory rag_mastra:ab-cd (built) · history 120 tokens · rag_mastra: hits 3 · shown messages 9'
    """
    from rich.markup import escape

    figures = item.get("system_figures")
    return escape(f"memory {item['memory_key']} ({built}) · history {item['history_tokens']} tokens · {system}"
                  + (f": {figures}" if figures else ""))


def _render_om_memory(detail: Mapping[str, Any], console: Any, full: bool) -> None:
    """OM's own sections: the observations of each generation, the reflections, the Observer's warnings."""
    from rich.markup import escape
    from rich.panel import Panel
    from rich.rule import Rule

    console.print(Rule("Observations by generation"))
    if not detail["memory"]:
        console.print("(no memory snapshot found in this results folder)")
    for record in detail["memory"]:
        for generation in record["generations"]:
            title = (f"{record['record']} · generation {generation['generation']} ({generation['origin']}) · "
                     f"{generation['observation_tokens']} tokens")
            console.print(Panel(escape(_cut(generation["observations"] or "(empty)", full)), title=escape(title),
                                title_align="left"))

    console.print(Rule("Reflections"))
    if not detail["reflections"]:
        console.print("(none)")
    for event in detail["reflections"]:
        console.print(f"#{event['seq']} {event['kind']} · generation {event['generation']} · level {event['level']} · "
                      f"{event['observation_tokens_before']} → {event['observation_tokens_after']} tokens"
                      + (f" · {escape(str(event['detail']))}" if event.get("detail") else ""))

    warnings = [event for event in detail["events"] if event["kind"] in OBSERVER_WARNINGS]
    if warnings:
        console.print(Rule("Observer warnings"))
    for event in warnings:
        console.print(f"#{event['seq']} {event['kind']} · generation {event['generation']}"
                      + (f" · {escape(str(event['detail']))}" if event.get("detail") else ""))


def _render_actor_view(detail: Mapping[str, Any], console: Any, full: bool) -> None:
    """What the actor saw, its recall calls, and every verdict on the answer."""
    from rich.markup import escape
    from rich.panel import Panel
    from rich.rule import Rule

    console.print(Rule("What the actor saw"))
    messages = detail["actor_messages"]
    if messages is None:
        console.print("(not stored for this run: it was made before om-eval kept actor prompts)")
    for message in messages or []:
        asked = "".join(f"\n→ {c['function']['name']}({c['function']['arguments']})" for c in message.get("tool_calls")
                        or ())
        title = message["role"] + (f" (answering {message['tool_call_id']})" if message.get("tool_call_id") else "")
        console.print(Panel(escape(_cut(str(message.get("content") or ""), full) + asked), title=title,
                            title_align="left"))
    calls = detail.get("recall_calls")
    if calls is not None:
        console.print(Rule(f"Recall calls ({len(calls)})"))
    for number, call in enumerate(calls or [], 1):
        error = f" · error: {escape(str(call['error']))}" if call.get("error") else ""
        console.print(f"#{number} round {call['round']} · {escape(call['name'])}({escape(call['arguments'])}) → "
                      f"{call['result_chars']:,} characters, {call['result_tokens']:,} tokens{error}")
        console.print(Panel(escape(_cut(str(call.get("result") or ""), full)), title=f"{call['call_id']} returned",
                            title_align="left"))

    console.print(Rule("Verdicts"))
    for judgment in detail["judgments"]:
        note = "" if judgment["current"] else " (graded an earlier answer)"
        console.print(f"{escape(str(judgment['judge']))} "
                      f"{escape('[' + str(judgment['judge_key']) + ']')} "
                      f"{verdict_text(judgment['label'], judgment['status'])}{note} · reply: "
                      f"{escape(str(judgment['reply']))}")
    if not detail["judgments"]:
        console.print("(only the item's verdict above is stored)")
    if detail["probes"]:
        console.print(Rule("Judge probes (answers whose right verdict is known)"))
    for probe in detail["probes"]:
        right = "" if probe["status"] != "ok" else (" ✓" if probe["label"] == probe["expected"] else " ✗ judge wrong")
        console.print(f"{escape(probe['judge'])} · {probe['probe']} (should be "
                      f"{'accepted' if probe['expected'] else 'rejected'}): {escape(repr(probe['probe_text'][:120]))} "
                      f"-> {verdict_text(probe['label'], probe['status'])}{right} · reply: "
                      f"{escape(str(probe['reply']))}")
