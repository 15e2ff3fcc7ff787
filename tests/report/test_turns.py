"""The report's cost-over-a-conversation sections, from stored rows."""

from __future__ import annotations

import pytest

from om_eval.bench.turn_costs import TurnTable, turn_costs
from om_eval.llm.cache_profiles import PROFILES
from om_eval.llm.pricing import call_cost
from om_eval.report.turns import (
    prompt_cache_rows,
    prompt_cache_section,
    run_tables,
    turn_rows,
    turn_section,
    unrecorded_note,
    unrecorded_runs,
)


def table(*prompts: int, gap: float = 5.0) -> TurnTable:
    made = TurnTable()
    previous = 0
    for index, prompt in enumerate(prompts):
        made.append(index * gap, prompt, previous, 1500, 50)
        previous = prompt
    made.observer_prompt[-1], made.observer_completion[-1] = 3000, 200
    return made


RUNS = [{"run_id": "om-run", "label": "om", "memory_system": "om"},
        {"run_id": "fc-run", "label": "full", "memory_key": "baseline:full_context"}]


def test_questions_sharing_a_haystack_count_its_table_once() -> None:
    shared = table(2000, 2600).to_json()
    items = [{"run_id": "om-run", "question_id": f"q{i}", "haystack_id": "conv-1", "turns": shared} for i in range(3)]
    items.append({"run_id": "om-run", "question_id": "q9", "haystack_id": None, "turns": table(4000).to_json()})
    items.append({"run_id": "om-run", "question_id": "q10", "haystack_id": None, "turns": None})
    assert [len(t) for t in run_tables(items)] == [2, 1]


def test_rows_sum_each_runs_tables_under_each_profile() -> None:
    om_tables = [table(2000, 2600, 3300), table(5000, 5600)]
    items = [{"run_id": "om-run", "question_id": f"q{i}", "turns": t.to_json()} for i, t in enumerate(om_tables)]
    items.append({"run_id": "fc-run", "question_id": "q0", "turns": table(9000, 9600).to_json()})
    rows = turn_rows(RUNS, items)
    assert [(r.label, r.profile) for r in rows] == [(run, p) for run in ("om", "full") for p in PROFILES]
    om_mini = next(r for r in rows if r.label == "om" and r.profile == "gpt-5-mini")
    costs = [turn_costs(t, PROFILES["gpt-5-mini"]) for t in om_tables]
    assert om_mini.turns == 5 and om_mini.questions == 2 and om_mini.mean_prompt == pytest.approx(18_500 / 5)
    assert om_mini.usd == pytest.approx(sum(c.total_usd for c in costs))
    assert om_mini.uncached_per_thousand == pytest.approx(1000 * sum(c.total_uncached_usd for c in costs) / 5)
    assert om_mini.ratio is not None and om_mini.actor_ratio is not None and om_mini.actor_ratio > om_mini.ratio > 1
    assert om_mini.memory == "OM" and rows[-1].memory == "baseline: full context"
    text = turn_section(rows)
    assert "| om | OM | gpt-5-mini | 5 | 3,700 |" in text and f"{om_mini.ratio:.2f}x" in text


def test_nothing_is_said_without_tables_or_cache_counts() -> None:
    assert turn_rows(RUNS, [{"run_id": "om-run", "question_id": "q", "turns": None}]) == []
    assert turn_section([]) == "" and prompt_cache_section([]) == ""


def test_the_calls_cached_share_and_saving_per_stage() -> None:
    calls = [
        {"run_id": "om-run", "stage": "actor", "model": "openai/gpt-4o", "prompt_tokens": 30_000,
         "completion_tokens": 100, "cached": False, "cost_usd": 0.0, "cached_prompt_tokens": 28_000},
        {"run_id": "om-run", "stage": "actor", "model": "openai/gpt-4o", "prompt_tokens": 10_000,
         "completion_tokens": 100, "cached": True, "cost_usd": 0.0, "cached_prompt_tokens": 0},
        {"run_id": "fc-run", "stage": "actor", "model": "openai/no-such-model", "prompt_tokens": 10,
         "completion_tokens": 1, "cached": False, "cost_usd": None, "cached_prompt_tokens": 5},
    ]
    om, full = prompt_cache_rows(RUNS, calls)
    assert (om.label, om.stage, om.calls, om.prompt_tokens, om.cached_tokens) == ("om", "actor", 2, 40_000, 28_000)
    full_price = call_cost("openai/gpt-4o", 30_000, 100)
    paid = call_cost("openai/gpt-4o", 30_000, 100, cached_prompt_tokens=28_000)
    assert full_price is not None and paid is not None
    assert om.saved_usd == pytest.approx(full_price - paid)  # 28,000 tokens at half of $2.50 per million
    assert om.saved_usd == pytest.approx(28_000 * 1.25e-6)
    assert full.saved_usd is None and "unknown" in prompt_cache_section([om, full])
    # At gpt-5-mini's prices ($0.25 per million input, $0.025 cached) the 28,000 cached tokens save 28,000 x 0.225e-6.
    assert om.saved_at(PROFILES["gpt-5-mini"]) == pytest.approx(28_000 * 0.225e-6)
    assert f"${28_000 * 0.225e-6:,.4f}" in prompt_cache_section([om])


def test_a_run_without_turn_tables_is_named_as_left_out_never_shown_as_free() -> None:
    runs = [*RUNS, {"run_id": "m0-run", "label": "memory=my_plugin", "memory_system": "my_plugin"}]
    items = [{"run_id": "om-run", "question_id": "q0", "turns": table(2000, 2600).to_json()},
             {"run_id": "fc-run", "question_id": "q0", "turns": table(9000).to_json()},
             {"run_id": "m0-run", "question_id": "q0", "turns": None}]
    missing = unrecorded_runs(runs, items)
    assert missing == ["memory=my_plugin (my_plugin): its memory system records no turns (a plugin is counted when "
                       "it calls services.record_turn)"]
    text = turn_section(turn_rows(runs, items), missing)
    assert "| memory=mem0 |" not in text and f"Not in this table: {missing[0]}." in text
    assert "not a cost of zero" in text
    assert unrecorded_note([]) == "" and "Not in this table" not in turn_section(turn_rows(RUNS, items[:2]), [])


def test_each_run_left_out_says_why() -> None:
    """The oracle reader has no conversation to replay; a built-in system without a table was made without turns."""
    runs = [{"run_id": "or-run", "label": "oracle", "memory_key": "baseline:oracle"},
            {"run_id": "off-run", "label": "off", "memory_system": "om",
             "config_json": '{"run": {"turn_costs": false}}'},
            {"run_id": "old-run", "label": "old", "memory_system": "rag_mastra"}]
    reasons = [line.split("): ", 1)[1] for line in unrecorded_runs(runs, [])]
    assert reasons == ["the oracle reader is shown only the evidence sessions, so no conversation is replayed turn by "
                       "turn", "made with run.turn_costs=false",
                       "made before turns were recorded, or with run.turn_costs=false"]


def test_turns_under_the_caching_minimum_are_marked_and_explained() -> None:
    """A ratio of 1.00x on short prompts says the prompts are short, not that caching fails: the row says so."""
    short = [{"run_id": "om-run", "question_id": "q0", "turns": table(300, 400, 500, 2000).to_json()}]
    rows = turn_rows(RUNS[:1], short)
    assert all(row.short_turns == 3 and row.mostly_short for row in rows)
    assert all(row.cells()["cached"].endswith(" †") for row in rows)
    assert "† Most turns' prompts are under the providers' 1,024-token caching minimum" in turn_section(rows)
    long = turn_rows(RUNS[:1], [{**short[0], "turns": table(2000, 2600, 300).to_json()}])
    assert not any(row.mostly_short for row in long) and "†" not in turn_section(long)


def test_on_a_console_of_80_columns_the_cost_tables_fit_and_every_short_column_is_defined() -> None:
    """Printed as markdown, a row of ten cells once wrapped mid-row at 80 columns under headers defined nowhere."""
    from rich.console import Console

    from om_eval.report.cost_text import TURN_LEGEND, prompt_cache_renderables, turn_renderables
    from om_eval.report.turns import PromptCacheRow

    items = [{"run_id": "om-run", "question_id": "q0", "turns": table(300, 2600).to_json()},
             {"run_id": "fc-run", "question_id": "q0", "turns": table(9000).to_json()}]
    console = Console(width=80, record=True, color_system=None)
    for renderable in [*turn_renderables(turn_rows(RUNS, items), ["oracle (baseline: oracle): why"]),
                       *prompt_cache_renderables([PromptCacheRow("om", "actor", 2, 40_000, 28_000, 0.035)])]:
        console.print(renderable)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "| " not in text  # no markdown row
    flat = " ".join(text.split())
    assert all(f"{name} = " in flat for name, _ in TURN_LEGEND)
    assert "Not in this table: oracle (baseline: oracle): why." in flat and "† Most turns'" in flat
    assert "om = OM" in flat and "full = baseline: full context" in flat
    assert turn_renderables([]) == [] and prompt_cache_renderables([]) == []
