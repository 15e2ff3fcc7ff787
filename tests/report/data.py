"""Hand-built runs and items for the report tests: three variants x the six types, abstention, judge errors.

Each run answers the same 24 questions (4 per type; the 4th of SS-user, multi-session, temporal and
knowledge-update is an abstention question). A pattern character per question: ``1`` right, ``0`` wrong,
``E`` judge error (label None), ``N`` never answered (not run). ``prompt=condensed`` is judged by the small local
model, so its rows carry the local-judge caveat.
"""

from __future__ import annotations

import hashlib
from typing import Any

SSU, SSP, SSA = "single-session-user", "single-session-preference", "single-session-assistant"
MS, TR, KU = "multi-session", "temporal-reasoning", "knowledge-update"
PREFIX = {SSU: "ssu", SSP: "ssp", SSA: "ssa", MS: "ms", TR: "tr", KU: "ku"}
ABSTAINING = {SSU, MS, TR, KU}
LOCAL_JUDGE = "local/qwen2.5-coder-1.5b"

#: label -> (judge mode, official, judge model, cost per question, base observation tokens, patterns per type)
VARIANTS: dict[str, tuple[str, bool, str, float, int, dict[str, str]]] = {
    "prompt=current": ("official", True, "gpt-4o-2024-08-06", 0.01, 1000,
                       {SSU: "1101", SSP: "1E00", SSA: "1111", MS: "1001", TR: "0110", KU: "1110"}),
    "prompt=legacy": ("official", True, "gpt-4o-2024-08-06", 0.02, 2000,
                      {SSU: "1111", SSP: "1100", SSA: "1110", MS: "1101", TR: "1110", KU: "1111"}),
    "prompt=condensed": ("house", False, LOCAL_JUDGE, 0.0, 500,
                         {SSU: "1011", SSP: "0110", SSA: "EEEE", MS: "0N01", TR: "0101", KU: "1100"}),
}


def run_id(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


def qid(qtype: str, i: int) -> str:
    return f"{PREFIX[qtype]}{i}" + ("_abs" if i == 4 and qtype in ABSTAINING else "")


def make_run(label: str) -> dict[str, Any]:
    mode, official, judge_model, _, _, _ = VARIANTS[label]
    return {"run_id": run_id(label), "label": label, "experiment": "test", "judge_mode": mode,
            "official": official, "judge_model": judge_model, "dataset_name": "synthetic"}


def make_items(label: str) -> list[dict[str, Any]]:
    _, _, _, cost, base_tokens, patterns = VARIANTS[label]
    items = []
    j = 0
    for qtype, pattern in patterns.items():
        for i, mark in enumerate(pattern, 1):
            answered = mark != "N"
            item = {
                "run_id": run_id(label), "question_id": qid(qtype, i), "question_type": qtype,
                "is_abstention": i == 4 and qtype in ABSTAINING,
                "status": "done" if answered else "error",
                "hypothesis": "an answer" if answered else None,
                "label": {"1": True, "0": False}.get(mark),
                "judge_status": {"1": "ok", "0": "ok", "E": "error", "N": "not_run"}[mark],
                "observation_tokens": base_tokens + 10 * j if answered else None,
                "actor_prompt_tokens": base_tokens + 400 + 10 * j if answered else None,
                "compression_ratio": 10.0 + j % 4 if answered else None,
                "cost_usd": cost if answered else None,
                "unknown_cost_calls": 0,
            }
            items.append(item)
            j += 1
    if label == "prompt=current":  # one question whose price is unknown
        items[8]["cost_usd"] = None
        items[8]["unknown_cost_calls"] = 1
    return items


def make_runs_items(labels: tuple[str, ...] = tuple(VARIANTS)) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return [make_run(label) for label in labels], [item for label in labels for item in make_items(label)]
