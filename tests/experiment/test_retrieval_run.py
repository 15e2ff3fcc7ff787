"""Retrieval mode through the whole job: the retrieval_smoke sweep (om.retrieval off and resource) lands both runs,
`om-eval show` prints every recall call and what it returned, the report counts the calls per question and their
cost, and the page draws them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from om_eval.cli import main
from om_eval.experiment.app import run_from_config
from om_eval.store import Catalog
from tests.runs import compose_run

pytestmark = pytest.mark.integration
QUESTION = "5ed4ff79"


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    results = tmp_path_factory.mktemp("retrieval")
    off = run_from_config(compose_run(results, "om.retrieval=off", experiment="retrieval_smoke"))["run_id"]
    on = run_from_config(compose_run(results, "om.retrieval=resource", experiment="retrieval_smoke"))["run_id"]
    return results, off, on


def test_both_runs_land_and_only_the_retrieval_run_called_the_tool(swept: tuple[Path, str, str],
                                                                   tmp_path: Path) -> None:
    results, off, on = swept
    assert off != on
    assert off == run_from_config(compose_run(tmp_path))["run_id"], "retrieval off is the smoke run itself"
    with Catalog(results, warn=False) as catalog:
        items = {r["run_id"]: r for r in catalog.query(
            "SELECT run_id, count(*) AS n, count(tool_calls) AS tooled, min(tool_calls) AS least, "
            "count_if(status = 'done') AS done FROM items GROUP BY run_id")}
        stages = {r["run_id"]: r["stages"] for r in catalog.query(
            "SELECT run_id, list(DISTINCT stage ORDER BY stage) AS stages FROM llm_calls GROUP BY run_id")}
    assert items[off]["done"] == items[on]["done"] == 7
    assert items[off]["tooled"] == 0 and items[on]["tooled"] == 7 and items[on]["least"] >= 1
    assert "recall" in stages[on] and "recall" not in stages[off]


def test_show_prints_each_recall_call_and_what_it_returned(swept: tuple[Path, str, str],
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one call per line
    results, _, on = swept
    assert main(["show", "--results", str(results), on[:10], QUESTION, "--full"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"Recall calls \(\d+\)", out)
    assert re.search(r"#1 round 0 · recall\(\{.*\}\) → [\d,]+ characters", out)
    assert "call_0_0 returned" in out and '"messages":' in out


def test_the_report_counts_calls_per_question_and_their_cost(swept: tuple[Path, str, str],
                                                             capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    results, _, _ = swept
    assert main(["report", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    section = out[out.index("## Recall (retrieval mode)"):]
    entries = [line for line in section.splitlines() if line.startswith("- **")]
    assert len(entries) == 1, "only the run whose actor had the tool"
    assert re.search(r"\d\.\d\d calls per question \(\d+ over 7 questions", entries[0])
    assert re.search(r"\d+ rounds after tool results, [\d,]+ prompt tokens, \$0\.0000", entries[0])
    assert "calls per question by category: " in section


def test_the_page_draws_the_recall_calls(swept: tuple[Path, str, str], tmp_path: Path) -> None:
    from om_eval.report.view import write_view
    from tests.report.test_view import browse

    results, _, on = swept
    page = write_view(results, tmp_path / "view.html", n_boot=50)
    done = browse(page, f"q={QUESTION}&a={on[:8]}", tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    drawn = re.sub(r"<script.*?</script>", "", done.stdout, flags=re.DOTALL)
    drawn = drawn[drawn.index('id="detail"'):]
    assert "Recall calls" in drawn and re.search(r"\d+ recall calls", drawn) and "recall({" in drawn
