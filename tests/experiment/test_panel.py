"""The judge panel on a smoke run: a judge with a known bias, the flips it causes and its measured false accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from om_eval.bench.benchmark import benchmark_named
from om_eval.bench.judging.judge import HOUSE_TEMPLATES
from om_eval.cli import main
from om_eval.experiment.app import run_from_config
from om_eval.experiment.rejudge import RejudgeError, rejudge_panel, rejudge_run
from om_eval.llm.providers import register_scripted
from om_eval.report.judge_panel import judge_quality, panel_report
from om_eval.store import Catalog
from om_eval.testing.scripted.model import ScriptedModel
from tests.runs import compose_run

LME = benchmark_named("longmemeval")
#: The opening words of the house temporal template only.
TEMPORAL_RULE = "Counts of days, weeks, months"


class TemporalYesJudge(ScriptedModel):
    """The scripted judge, except that it accepts every answer to a temporal question: a known bias."""

    def _answer(self, messages, stage, fault):
        if stage == "judge" and TEMPORAL_RULE in messages[-1]["content"]:
            return "yes"
        return super()._answer(messages, stage, fault)


def test_the_bias_is_aimed_at_the_temporal_template_only() -> None:
    assert [name for name, text in HOUSE_TEMPLATES.items() if TEMPORAL_RULE in text] == ["temporal"]


@pytest.fixture(scope="module")
def paneled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A two-variant smoke sweep (prompt=current and legacy), each run graded by the panel with the biased judge
    and probed; the tests read the first run, the report test both."""
    results = tmp_path_factory.mktemp("panel")
    run_id = run_from_config(compose_run(results))["run_id"]
    other = run_from_config(compose_run(results, "prompt=legacy"))["run_id"]
    assert other != run_id
    biased = register_scripted("temporal-yes", TemporalYesJudge())
    for run in (run_id, other):
        result = rejudge_panel(results, run, ["judge=panel", f"judge.panel=[house,house:{biased},lenient]"],
                               probes=True)
        assert result.labels == ["house", f"house:{biased}", "lenient"] and not result.skipped
        assert all(r.errors == 0 and r.probe_errors == 0 for r in result.judges)
    return results, run_id, biased


def test_the_panel_reports_exactly_the_flips_the_bias_causes(paneled: tuple[Path, str, str]) -> None:
    results, run_id, biased = paneled
    with Catalog(results) as catalog:
        items = catalog.items([run_id])
        panel = panel_report(catalog, run_id, LME)
    assert panel is not None and panel.n == len(items) == 7
    honest = "house:scripted/om-eval"
    labels = [j.label for j in panel.judges]
    assert labels[0] == honest and panel.judges[0].own  # the run's own judge comes first
    assert set(labels) == {honest, f"house:{biased}", "lenient:scripted/om-eval"}
    # Expected a priori: the temporal questions the honest judge said no to, and only those, flip for the biased one.
    expected = {i["question_id"] for i in items if i["question_type"] == "temporal-reasoning" and not i["label"]}
    assert expected, "the smoke run must have a temporal question graded wrong for this test to bite"
    flipped_by_bias = {f.question_id for f in panel.flips
                       if f.verdicts[honest][0] != f.verdicts[f"house:{biased}"][0]}
    assert flipped_by_bias == expected
    for flip in panel.flips:
        assert all(reply in ("yes", "no") for _, reply in flip.verdicts.values())
    by_label = {j.label: j for j in panel.judges}
    assert by_label[f"house:{biased}"].by_category["temporal-reasoning"] == 1.0
    assert panel.category_spread("temporal-reasoning") == pytest.approx(
        1.0 - by_label[honest].by_category["temporal-reasoning"])


def test_the_probes_measure_the_bias_exactly(paneled: tuple[Path, str, str]) -> None:
    results, run_id, biased = paneled
    with Catalog(results) as catalog:
        qualities = {q.label: q for q in judge_quality(catalog, run_id, LME)}
        honest_rows = catalog.query("SELECT question_id, probe, label FROM probe_verdicts WHERE run_id = ? AND "
                                    "judge_model = 'scripted/om-eval' AND judge_mode = 'house'", [run_id])
        types = {i["question_id"]: i["question_type"] for i in catalog.items([run_id])}
    honest, skewed = qualities["house:scripted/om-eval"], qualities[f"house:{biased}"]
    wrong = [r for r in honest_rows if r["probe"] != "gold"]
    # The bias adds exactly the temporal questions' wrong probes to what the honest judge accepts.
    accepted = [r for r in wrong if r["label"] or types[r["question_id"]] == "temporal-reasoning"]
    assert skewed.n_wrong == honest.n_wrong == len(wrong) > 0
    assert skewed.false_accept == pytest.approx(len(accepted) / len(wrong))
    assert skewed.false_accept > honest.false_accept and skewed.false_reject == honest.false_reject == 0.0
    assert skewed.by_category["temporal-reasoning"] == (1.0, 0.0)
    assert {c: v for c, v in skewed.by_category.items() if c != "temporal-reasoning"} == {
        c: v for c, v in honest.by_category.items() if c != "temporal-reasoning"}
    # The word-overlap scripted judge has a weakness of its own, which the probes find: a number moved inside
    # an otherwise identical sentence ("7 days. 8 days (including ...") keeps most of the gold's words.
    assert honest.false_accept_wrong > 0.0 and honest.false_accept_vague == 0.0


def test_the_report_shows_panel_quality_and_floor(paneled: tuple[Path, str, str],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    results, _, biased = paneled
    assert main(["report", "--results", str(results), "--markdown", str(results / "r.md")]) == 0
    text = (results / "r.md").read_text()
    for part in ("## Judge-free floor", "## Judge panel", "## Judge quality", f"house:{biased}", "**range**",
                 "questions flip between judges", "FA vague"):
        assert part in text, part
    assert text.count("judges on the same 7 answers") == 2  # one panel per run of the sweep


def test_a_panel_needs_known_protocols_and_rejudge_run_refuses_it(paneled: tuple[Path, str, str]) -> None:
    results, run_id, _ = paneled
    from om_eval.om.config import ConfigError

    with pytest.raises(ConfigError, match="names no protocol"):
        rejudge_panel(results, run_id, ["judge=panel", "judge.panel=[house,sloppy]"])
    with pytest.raises(RejudgeError, match="several protocols"):
        rejudge_run(results, run_id, ["judge=panel"])


def test_official_protocols_are_skipped_with_the_reason_when_the_templates_cannot_load(
        paneled: tuple[Path, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results, run_id, _ = paneled
    code = main(["rejudge", run_id[:8], "judge=panel", "judge.panel=[official,mastra,house]",
                 f"judge.source={tmp_path / 'nowhere'}", "--results", str(results)])
    captured = capsys.readouterr()
    assert code == 1 and "graded by house" in captured.out  # a judge.source given that does not load: to fix
    assert "not graded: official, mastra: " in captured.err and "judge.source" in captured.err


@pytest.fixture
def offline_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A smoke run on a machine without network or keys: the upstream templates are not cached and cannot be
    downloaded, and no hosted model has credentials."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    results = tmp_path / "results"
    return results, run_from_config(compose_run(results))["run_id"]


def judged_by(results: Path, run_id: str) -> set[str]:
    with Catalog(results) as catalog:
        rows = catalog.query("SELECT DISTINCT judge_mode, judge_model FROM judgments WHERE run_id = ?", [run_id])
    return {f"{r['judge_mode']}:{r['judge_model']}" for r in rows}


def test_offline_the_panel_exits_0_over_protocols_skipped_by_design_and_strict_fails(
        offline_run: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    results, _ = offline_run
    rejudge = ["rejudge", "smoke", "judge=panel", "--probes", "--results", str(results)]
    assert main(rejudge) == 0
    captured = capsys.readouterr()
    for protocol in ("house", "house_strict", "lenient"):
        assert f"graded by {protocol}, 0 judge errors" in captured.out
    assert captured.err.count("not graded") == 1 and "not graded: official, mastra: " in captured.err
    assert captured.err.count("judge.source") == 1  # the hint, once
    assert main([*rejudge, "--strict"]) == 1
    assert "official, mastra not graded (--strict)" in capsys.readouterr().err


def test_a_hosted_judge_without_its_key_is_skipped_and_graded_by_no_one(
        offline_run: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    results, run_id = offline_run
    rejudge = ["rejudge", run_id[:8], "judge=panel", "judge.panel=[house,lenient:gpt-4o-judge]", "--results",
               str(results)]
    assert main(rejudge) == 0
    assert "not graded: lenient:gpt-4o-judge: missing credentials for openai/" in capsys.readouterr().err
    assert main([*rejudge, "--strict"]) == 1
    assert judged_by(results, run_id) == {"house:scripted/om-eval"}  # no verdict was stored as an error
    # A single judge without its key grades nothing: refused before any call.
    assert main(["rejudge", run_id[:8], "model@models.judge=gpt-4o-judge", "--results", str(results)]) == 2
    assert "missing credentials for openai/" in capsys.readouterr().err
    # A panel none of whose protocols can grade did nothing either.
    assert main(["rejudge", run_id[:8], "judge=panel", "judge.panel=[official,mastra]", "--results",
                 str(results)]) == 2
    assert "no protocol of judge.panel could grade this run" in capsys.readouterr().err
    assert judged_by(results, run_id) == {"house:scripted/om-eval"}


def test_probe_verdicts_keep_the_text_shown_and_the_expected_verdict(paneled: tuple[Path, str, str]) -> None:
    results, run_id, _ = paneled
    with Catalog(results) as catalog:
        rows = catalog.query("SELECT probe, probe_text, expected, judge_identity FROM probe_verdicts "
                             "WHERE run_id = ?", [run_id])
    assert {r["probe"] for r in rows} == {"gold", "vague", "wrong"}
    assert all(r["expected"] == (r["probe"] == "gold") and r["probe_text"] for r in rows)
    assert {json.loads(r["judge_identity"])["mode"] for r in rows} == {"house", "lenient"}


def test_show_prints_each_judges_verdict_and_probes(paneled: tuple[Path, str, str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    results, run_id, biased = paneled
    assert main(["show", run_id[:8], "9ce80b45", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert f"house:{biased}" in out and "lenient:scripted/om-eval" in out
    assert "Judge probes" in out and "should be rejected" in out
    assert "judge wrong" in out  # the biased judge accepted this temporal question's wrong probes


@pytest.mark.integration  # starts a browser: a process
def test_the_page_shows_the_panel_flips_and_judge_quality(paneled: tuple[Path, str, str], tmp_path: Path) -> None:
    import shutil
    import subprocess

    from om_eval.report.view import write_view

    results, _run_id, biased = paneled
    page = write_view(results, tmp_path / "view.html", n_boot=50)
    chromium = next((found for name in ("/usr/bin/chromium", "chromium", "chromium-browser")
                     if (found := shutil.which(name))), None)
    if chromium is None:
        pytest.skip("Chromium not installed: apt-get install chromium")
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
                           page.as_uri()], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    section = done.stdout[done.stdout.index('id="agreement"'):done.stdout.index('id="questions"')]
    assert "judge panel" in section and f"house:{biased}" in section and "<b>range</b>" in section
    assert "1 of 7 questions flip between judges" in section and "9ce80b45" in section
    assert "vague accepted" in section and "false reject" in section


class ChattyJudge(ScriptedModel):
    """The scripted judge's verdicts, said in a sentence: 'Yes, it matches.' passes the official parse only."""

    def _answer(self, messages, stage, fault):
        plain = super()._answer(messages, stage, fault)
        if stage != "judge":
            return plain
        return "Yes, it matches." if plain == "yes" else "No, it does not."


def test_the_official_and_mastra_protocols_differ_only_by_their_parse(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from om_eval.bench.judging import protocols as panel_module
    from om_eval.bench.judging.judge import Judge
    from tests.bench.judging.test_judge import standin_source, write_standin
    from tests.experiment.test_exports import READABLE_STANDIN

    source, _ = write_standin(tmp_path / "upstream", standin_source(READABLE_STANDIN))

    class StandinJudge(Judge):
        @classmethod
        def official(cls, source, **options):
            # The pinned sha256 guards real runs; the stand-in's bytes are not upstream's.
            return Judge.official(source, expected_sha256=None, **options)

    monkeypatch.setattr(panel_module, "Judge", StandinJudge)
    results = tmp_path / "results"
    run_id = run_from_config(compose_run(results))["run_id"]
    chatty = register_scripted("chatty", ChattyJudge())
    outcome = rejudge_panel(results, run_id, ["judge=panel", "judge.panel=[official,mastra]",
                                              f"judge.source={source}", f"models.judge.model={chatty}"])
    assert outcome.labels == ["official", "mastra"] and not outcome.skipped
    with Catalog(results) as catalog:
        panel = panel_report(catalog, run_id, LME)
    by_label = {j.label: j for j in panel.judges}
    official, mastra = by_label[f"official:{chatty}"], by_label[f"mastra:{chatty}"]
    assert mastra.accuracy == 0.0 and official.accuracy > 0.0  # "Yes, it matches." is not 'yes' or 'yes.'
    accepted = {f.question_id for f in panel.flips if f.verdicts[f"official:{chatty}"][0]}
    assert len(accepted) == round(official.accuracy * panel.n)
    assert all(f.verdicts[f"mastra:{chatty}"] == (False, "Yes, it matches.") for f in panel.flips
               if f.question_id in accepted)
