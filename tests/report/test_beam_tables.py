"""A BEAM run in the report: its score per ability taken per chat then over chats, the micro mean, undefined
scores counted and named, the rounding shown, the full-marks share after the score."""

from __future__ import annotations

import json
import math
from typing import Any

from om_eval.report.table_text import to_csv, to_markdown
from om_eval.report.tables import summary_table


def _beam_run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    run = {"run_id": "b" * 16, "label": "om on beam", "experiment": "beam_smoke", "judge_mode": "house",
           "official": False, "judge_model": "openai/gpt-4.1-mini", "dataset_name": "beam-100K", "benchmark": "beam",
           "judge_identity": json.dumps({"mode": "beam-house", "rounding": "upstream"})}
    items = []
    # Chat 1 answers every knowledge-update question right, chat 2 none: per chat then over chats is 0.5 even though
    # chat 1 has three questions and chat 2 one (a micro mean would say 0.75).
    scores = {("beam_100K_1", "knowledge_update"): [1.0, 1.0, 1.0], ("beam_100K_2", "knowledge_update"): [0.0],
              ("beam_100K_1", "event_ordering"): [math.nan, 0.5]}
    for (chat, ability), values in scores.items():
        for i, value in enumerate(values):
            items.append({"run_id": run["run_id"], "question_id": f"{chat}_{ability}_{i}", "question_type": ability,
                          "is_abstention": False, "status": "done", "hypothesis": "x", "label": value == 1.0,
                          "judge_status": "ok", "score": value, "haystack_id": chat, "cost_usd": 0.0,
                          "unknown_cost_calls": 0})
    return run, items


def test_the_beam_score_leads_and_undefined_scores_are_named() -> None:
    run, items = _beam_run()
    table = summary_table([run], items, n_boot=20)
    [row] = table.rows
    assert row.own is not None and row.rounding == "upstream (int() per item)"
    assert row.own.per_type["knowledge_update"] == (0.5, 4)
    assert row.own.micro == (3.0 + 0.5) / 5 and row.own.undefined == 1
    assert row.own.undefined_ids == ("beam_100K_1_event_ordering_0",)
    text = to_markdown(table)
    lines = text.splitlines()
    first_score = next(i for i, line in enumerate(lines) if line.startswith("| BEAM KU "))
    first_full = next(i for i, line in enumerate(lines) if line.startswith("| full KU "))
    assert first_score < first_full
    assert "| BEAM undefined | 1 |" in text and "BEAM undefined in om on beam: beam_100K_1_event_ordering_0." in text
    assert "categories are shown with the benchmark's own numbers" not in text
    assert all(f"| BEAM {short} " in text for short in ("ABS", "CR", "EO", "IE", "IF", "KU", "MR", "PF", "SUM", "TR"))
    csv = to_csv(table)
    assert "beam_micro" in csv.splitlines()[0] and "beam_undefined" in csv.splitlines()[0]
