"""Case 6: a panel judge that fails is named, counted and never narrows the comparison silently.

The drill: ``om-eval rejudge RUN judge=panel`` with one judge whose provider answered 404 exited 1 without a reason
(the error was only in ``judgments.error``); ``report`` then dropped a judge that failed on every answer, and a judge
failing on 4 of 7 answers narrowed the panel to the 3 answers every judge graded, showing the run's own judge at
33.3 % instead of its 42.9 %, without a word.

Here a smoke run (7 answers, 3 judged correct by its own judge) is graded by a panel of three: the run's own house
judge, a judge whose model is "not found" for 4 chosen answers (2 its own judge accepted, 2 it rejected), and one
whose model is not found at all. So the numbers are known before anything runs: the shared set is 3 answers, 1 of
them correct (33.3 %), while the run's judge graded 7 with 3 correct (42.9 %).
"""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from om_eval.bench.benchmark import benchmark_named
from om_eval.cli import main
from om_eval.experiment.app import run_from_config
from om_eval.llm.providers import register_scripted
from om_eval.report.agreement import run_agreement
from om_eval.report.judge_panel import panel_markdown, panel_report
from om_eval.store import Catalog
from om_eval.testing.scripted.model import ScriptedModel, ScriptedModelError
from tests.runs import compose_run

LME = benchmark_named("longmemeval")
OWN = "house:scripted/om-eval"
#: A provider's "no such model" reply, long as real ones can be: the printed reason must stay one short line.
NOT_FOUND = "404 NotFoundError: The model `retired-judge` does not exist or you do not have access to it. " + "x" * 4000


class NotFoundJudge(ScriptedModel):
    """The scripted judge, except that grading a question whose text is in ``doomed`` (every question, when
    ``doomed`` is None) fails for good with HTTP 404, as a retired model deployment answers."""

    def __init__(self, doomed: Sequence[str] | None) -> None:
        super().__init__()
        self.doomed = doomed

    def _answer(self, messages, stage, fault):
        prompt = messages[-1]["content"]
        if stage == "judge" and (self.doomed is None or any(text in prompt for text in self.doomed)):
            raise ScriptedModelError(NOT_FOUND, 404)
        return super()._answer(messages, stage, fault)


@dataclass(frozen=True)
class Paneled:
    results: Path
    run_id: str
    flaky: str
    """``lenient:<model>``: fails on 4 of the 7 answers."""
    dead: str
    """``house_strict:<model>``: fails on all 7."""
    doomed: frozenset[str]
    code: int
    out: str
    err: str


@pytest.fixture(scope="module")
def paneled(tmp_path_factory: pytest.TempPathFactory) -> Paneled:
    results = tmp_path_factory.mktemp("panel-failures")
    run_id = run_from_config(compose_run(results))["run_id"]
    with Catalog(results) as catalog:
        items = catalog.items([run_id])
    accepted = sorted(i["question_id"] for i in items if i["label"])
    rejected = sorted(i["question_id"] for i in items if not i["label"])
    assert (len(accepted), len(rejected)) == (3, 4), "the smoke run's own judge must accept 3 of 7 for this case"
    doomed = {*accepted[:2], *rejected[:2]}
    texts = [i["question"] for i in items if i["question_id"] in doomed]
    flaky = register_scripted("panel-flaky", NotFoundJudge(texts))
    dead = register_scripted("panel-dead", NotFoundJudge(None))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["rejudge", run_id[:8], "judge=panel", f"judge.panel=[house,lenient:{flaky},house_strict:{dead}]",
                     "--results", str(results)])
    return Paneled(results, run_id, f"lenient:{flaky}", f"house_strict:{dead}", frozenset(doomed), code,
                   out.getvalue(), err.getvalue())


def test_rejudge_prints_each_failed_judges_reason_and_exits_1(paneled: Paneled) -> None:
    assert paneled.code == 1
    reasons = [line for line in paneled.err.splitlines() if line.startswith("  judge error: ")]
    assert len(reasons) == 2, paneled.err  # one line per failed judge, none for the judge that graded everything
    flaky, dead = reasons
    assert f"{paneled.flaky} failed on 4 of 7 answers: " in flaky and "(HTTP 404)" in flaky and "retired-judge" in flaky
    assert f"{paneled.dead} failed on 7 of 7 answers: " in dead and "(HTTP 404)" in dead
    assert all(len(line) < 250 and line.endswith("…") for line in reasons)  # the 4,000-character reply, shortened
    assert OWN not in "".join(reasons)
    assert "2 of 3 judges could not grade every answer" in paneled.err
    assert "0 judge errors" in paneled.out and "4 judge errors" in paneled.out and "7 judge errors" in paneled.out


def test_the_failures_rejudge_names_are_those_the_store_holds(paneled: Paneled) -> None:
    with Catalog(paneled.results) as catalog:
        rows = catalog.query("SELECT question_id, judge_model, status, error FROM judgments WHERE run_id = ? AND "
                             "status <> 'ok'", [paneled.run_id])
    flaky_model = paneled.flaky.split(":", 1)[1]
    assert {r["question_id"] for r in rows if r["judge_model"] == flaky_model} == paneled.doomed
    assert len(rows) == 4 + 7 and all("HTTP 404" in r["error"] for r in rows)


def test_the_panel_lists_every_member_with_graded_and_failed_counts(paneled: Paneled) -> None:
    with Catalog(paneled.results) as catalog:
        panel = panel_report(catalog, paneled.run_id, LME)
    assert panel is not None
    counts = {j.label: (j.graded, j.failed, j.own) for j in panel.judges}
    assert counts == {OWN: (7, 0, True), paneled.flaky: (3, 4, False), paneled.dead: (0, 7, False)}
    text = panel_markdown(panel, LME)
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:3] for line in text.splitlines()
            if line.startswith("| ") and " | " in line}
    assert rows[f"{OWN} (run's judge)"] == ["7", "0"]
    assert rows[paneled.flaky] == ["3", "4"]
    assert rows[f"{paneled.dead} (graded none)"] == ["0", "7"]  # listed and marked, not dropped
    assert f"- {paneled.flaky} failed on 4 answers: " in text and f"- {paneled.dead} failed on 7 answers: " in text
    assert "HTTP 404" in text


def test_the_narrowing_is_stated_and_each_judge_keeps_its_own_accuracy(paneled: Paneled) -> None:
    with Catalog(paneled.results) as catalog:
        panel = panel_report(catalog, paneled.run_id, LME)
    assert panel is not None and (panel.n, panel.total) == (3, 7)
    by_label = {j.label: j for j in panel.judges}
    own = by_label[OWN]
    assert own.accuracy_graded == pytest.approx(3 / 7) and own.accuracy == pytest.approx(1 / 3)
    assert by_label[paneled.flaky].accuracy_graded == pytest.approx(1 / 3)
    assert by_label[paneled.dead].accuracy is None and by_label[paneled.dead].accuracy_graded is None
    assert panel.note == (f"{paneled.dead} (failed on 7) graded none and is left out; compared on 3 of 7 answers, "
                          f"those all the others graded: {paneled.flaky} failed on 4")
    assert all(set(flip.verdicts) == {OWN, paneled.flaky} for flip in panel.flips)
    text = panel_markdown(panel, LME)
    assert "judges on the same" not in text and "all it graded" in text
    own_row = next(line for line in text.splitlines() if line.startswith(f"| {OWN} (run's judge)"))
    assert own_row.endswith("| 33.3 | 42.9 |")  # on the shared 3, then on its own 7


def test_agreement_pairs_state_the_narrowing_and_keep_the_failed_judge(paneled: Paneled) -> None:
    with Catalog(paneled.results) as catalog:
        pairs = {(p.first, p.second): p for p in run_agreement(catalog, paneled.run_id)}
    assert set(pairs) == {(OWN, paneled.flaky), (OWN, paneled.dead), (paneled.dead, paneled.flaky)}
    flaky = pairs[(OWN, paneled.flaky)]
    assert (flaky.n, flaky.answers, flaky.graded_first, flaky.graded_second) == (3, 7, 7, 3)
    assert flaky.accuracy_first == pytest.approx(1 / 3) and flaky.graded_accuracy_first == pytest.approx(3 / 7)
    assert flaky.note == f"compared on 3 of 7 answers, those both judges graded: {paneled.flaky} failed on 4"
    dead = pairs[(OWN, paneled.dead)]
    assert dead.n == 0 and dead.kappa is None and f"{paneled.dead} failed on 7" in dead.note


def test_the_report_shows_the_failures_and_both_accuracies(paneled: Paneled) -> None:
    out = io.StringIO()
    markdown = paneled.results / "report.md"
    with contextlib.redirect_stdout(out):
        assert main(["report", "--results", str(paneled.results), "--markdown", str(markdown)]) == 0
    text = markdown.read_text()
    agreement = text[text.index("## Judge agreement"):text.index("## Comparability")]
    assert (f"{OWN} vs {paneled.flaky} · n=3 · agreement" in agreement
            and "compared on 3 of 7 answers, those both judges graded: " in agreement
            and "on every answer each graded: 42.9% of 7 vs 33.3% of 3" in agreement)
    assert f"{OWN} vs {paneled.dead} · n=0" in agreement
    panel = text[text.index("## Judge panel"):]
    assert f"3 judges, {paneled.dead} (failed on 7) graded none and is left out; compared on 3 of 7" in panel
    assert f"{paneled.dead} (graded none) | 0 | 7 |" in panel
    printed = " ".join(out.getvalue().split())  # rich wraps lines on the console
    assert "compared on 3 of 7 answers" in printed and "(graded none)" in printed


def test_a_single_judge_that_fails_says_why_too(paneled: Paneled, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    shutil.copytree(paneled.results, results)  # another judge here would change the other cases' panel
    model = paneled.dead.split(":", 1)[1]
    code = main(["rejudge", paneled.run_id[:8], f"models.judge.model={model}", "--results", str(results)])
    err = capsys.readouterr().err
    assert code == 1
    assert f"  judge error: house:{model} failed on 7 of 7 answers: " in err and "(HTTP 404)" in err
    assert "1 of 1 judge could not grade every answer" in err
