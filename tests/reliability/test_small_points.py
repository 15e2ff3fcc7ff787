"""Issue 46 item 8: the smaller points of the drill, one case each.

A label with rich markup crashed ``om-eval run`` and bracketed overrides vanished from its header; a run whose
every question failed still pointed at official exports it never wrote; a bad ``memory.observer`` of the simple layer
was found only once a store file existed. (A reply from another model than the one asked for:
``test_endpoint_usage.py``; the budget's overshoot by the questions in flight is stated in docs/reliability.md.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.harness import invoke
from tests.reliability.hostile_plugins import hostile_plugin  # noqa: F401  # the fixture


def test_a_label_with_markup_and_brackets_is_printed_as_written(tmp_path: Path) -> None:
    done = invoke(tmp_path, "run.label='[/bold]x [locomo_1]'", "dataset.subset.first=1")
    assert done.code == 0, done.output[-2000:]
    assert "· [/bold]x [locomo_1] ·" in done.flat and "([/bold]x [locomo_1])" in done.flat


@pytest.mark.usefixtures("hostile_plugin")
def test_a_run_whose_every_question_failed_points_at_no_exports(tmp_path: Path) -> None:
    done = invoke(tmp_path, "memory=hostile", "memory.mode=exit", "dataset.subset.first=2")
    assert done.code == 1, done.output[-2000:]
    assert "no official exports: no question is done yet" in done.flat
    assert done.flat.count("official exports:") == 1


def test_a_bad_observer_of_the_simple_layer_is_refused_before_any_store_file(tmp_path: Path) -> None:
    done = invoke(tmp_path, "memory=simple_om", "memory.observer=bogus")
    assert done.code == 1 and "memory.observer='bogus' is invalid" in done.flat, done.output[-2000:]
    assert not list(tmp_path.glob("store/*.duckdb"))
