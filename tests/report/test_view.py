"""om-eval view on a small sweep: the embedded data, escaping, determinism, and the page as Chromium draws it."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import markupsafe
import pytest
from hydra import compose, initialize_config_dir

from om_eval.cli import main
from om_eval.configs import CONFIG_DIR
from om_eval.experiment.app import run_from_config
from om_eval.experiment.schema import register_configs
from om_eval.llm.cache_profiles import PROFILES
from om_eval.llm.providers import register_scripted
from om_eval.report.turns import turn_rows, turn_section
from om_eval.report.view import (
    ACTOR_HEAD_LINES,
    ACTOR_TAIL_LINES,
    clip_messages,
    clip_text,
    write_view,
)
from om_eval.store import Catalog
from om_eval.testing.scripted.model import ScriptedModel, ScriptedModelError

KU_QUESTION = "5ed4ff79"  # knowledge-update: 30:40, later 30:28
TEMPORAL = "9ce80b45"  # 6th of the mini set: left out of the 5-question run
#: A label that would break the page if any part of it were not escaped.
HOSTILE = '<b>cur & "rent"</b> 🔴 </script>'
DATA_BLOCK = re.compile(r'<script type="application/json" id="view-data">(.*?)</script>', re.DOTALL)
SCRIPTS = re.compile(r"<script\b.*?</script>", re.DOTALL)
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--virtual-time-budget=5000")


def composed(results: Path, *overrides: str) -> object:
    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=["experiment=smoke", *overrides, f"run.results_dir={results}",
                                            f"run.cache_dir={results / 'cache'}", "run.progress=false"])


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Two variants (the second on the first 5 questions only) and a second judge on the first."""
    results = tmp_path_factory.mktemp("view")
    first = run_from_config(composed(results, "prompt=current", f"run.label='{HOSTILE}'"))["run_id"]
    second = run_from_config(composed(results, "prompt=legacy", "dataset.subset.first=5"))["run_id"]
    assert main(["rejudge", first[:8], "judge.parse=mastra", "--probes", "--results", str(results)]) == 0
    return results, first, second


@pytest.fixture(scope="module")
def page(sweep: tuple[Path, str, str]) -> tuple[Path, str, dict]:
    results = sweep[0]
    path = write_view(results, results / "report.html", n_boot=200)
    text = path.read_text(encoding="utf-8")
    return path, text, json.loads(DATA_BLOCK.search(text).group(1))


def test_the_page_embeds_runs_questions_and_one_detail_per_run_and_question(
        sweep: tuple[Path, str, str], page: tuple[Path, str, dict]) -> None:
    _, first, second = sweep
    _, text, data = page
    assert [r["id"] for r in data["runs"]] and {r["id"] for r in data["runs"]} == {first, second}
    assert [q["id"] for q in data["questions"]] == sorted(q["id"] for q in data["questions"])
    assert len(data["questions"]) == 7 and len(data["details"][first]) == 7 and len(data["details"][second]) == 5
    temporal = next(q for q in data["questions"] if q["id"] == TEMPORAL)
    assert first in temporal["marks"] and second not in temporal["marks"]  # absent, not wrong
    detail = data["details"][first][KU_QUESTION]
    assert detail["item"]["gold_answer"] == "30:28" and detail["item"]["hypothesis"]
    assert {t["status"] for t in detail["evidence"]} == {"in_memory"}
    assert len(detail["judgments"]) == 2 and detail["actor"][0]["role"] == "system"
    memory = data["memories"][detail["memory"]]
    assert "30:28" in memory["records"][0]["generations"][-1]["observations"] and memory["events"]
    # the static parts: runs table with the judge warning, bars (0% and n/a told apart), judge agreement
    assert text.count('<tr data-run="') == 2 and text.count("⚠ test judge") >= 2
    assert 'class="track zero"' in text and 'class="track na"' in text and "n/a" in text
    assert data["agreement"][0]["kappa"] == pytest.approx(1.0) and "Cohen&#39;s kappa" in text
    assert "http://" not in SCRIPTS.sub("", text) and "https://" not in text  # nothing to fetch


def test_stored_text_is_escaped_everywhere(page: tuple[Path, str, dict]) -> None:
    _, text, data = page
    block = DATA_BLOCK.search(text).group(1)
    assert "</" not in block and "<!--" not in block
    assert any(r["label"] == HOSTILE for r in data["runs"])  # intact once parsed
    outside = DATA_BLOCK.sub("", text)
    assert "<b>cur" not in outside and str(markupsafe.escape(HOSTILE)) in outside  # jinja2's autoescape
    assert "<thread" not in outside and "<observations>" not in outside
    assert outside.count("</script>") == 1  # only the page's own script ends


def test_the_same_store_gives_the_same_bytes(sweep: tuple[Path, str, str], tmp_path: Path) -> None:
    results, first, _ = sweep
    a = write_view(results, tmp_path / "a.html", n_boot=200).read_bytes()
    b = write_view(results, tmp_path / "b.html", n_boot=200).read_bytes()
    assert a == b
    only = write_view(results, tmp_path / "one.html", run_prefixes=[first[:6]], n_boot=200).read_text()
    assert len(json.loads(DATA_BLOCK.search(only).group(1))["runs"]) == 1


def test_unknown_runs_and_empty_folders_are_named(sweep: tuple[Path, str, str], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(LookupError, match="no runs in"):
        write_view(tmp_path / "empty", tmp_path / "x.html")
    with pytest.raises(LookupError, match="no run matches 'zzz'"):
        write_view(sweep[0], tmp_path / "x.html", run_prefixes=["zzz"])
    assert main(["view", "--results", str(sweep[0]), "--runs", "zzz", "--out", str(tmp_path / "x.html")]) == 2
    assert "no run matches" in capsys.readouterr().err
    assert main(["view", "--results", str(sweep[0]), "--out", str(tmp_path / "v.html"), "--n-boot", "50"]) == 0
    assert (tmp_path / "v.html").stat().st_size > 10_000


def section(text: str, name: str) -> str:
    """The static HTML of one ``<section id=name>`` of the page."""
    start = text.index(f'<section id="{name}">')
    return text[start:text.index("</section>", start)]


def cells(row_html: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row_html)]


def body_rows(table_html: str) -> list[list[str]]:
    """The cells of each ``<tr>`` with cells (header rows left out), tags stripped and unescaped."""
    return [found for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table_html) if (found := cells(row))]


def test_the_cost_per_turn_table_is_the_reports(sweep: tuple[Path, str, str], page: tuple[Path, str, dict]) -> None:
    results = sweep[0]
    _, text, data = page
    with Catalog(results) as catalog:
        runs = {r["run_id"]: r for r in catalog.runs()}
        ordered = [runs[r["id"]] for r in data["runs"]]  # the page's run order
        expected = turn_rows(ordered, catalog.items(list(runs)))
    assert len(expected) == 2 * len(PROFILES)  # both runs recorded turn tables: every profile of each
    shown = body_rows(section(text, "turn-costs"))
    assert len(shown) == len(expected)
    # the same cells as the report's markdown table (turn_section), row for row; each run named as in the page
    markdown = [[html.unescape(c.strip()) for c in line.strip("|").split("|")]
                for line in turn_section(expected).splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [row[1:] for row in shown] == [row[1:] for row in markdown]
    assert [row[0] for row in shown] == [r["label"] for r in data["runs"] for _ in PROFILES]
    swatches = re.findall(r'<tr><td><i class="swatch" style="background:(#\w+)">', section(text, "turn-costs"))
    assert swatches == [r["color"] for r in data["runs"] for _ in PROFILES]
    head = re.search(r'<table class="turn-costs"><thead><tr>(.*?)</tr>', text).group(1)
    assert [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", head)] == [
        c.strip() for c in next(line for line in turn_section(expected).splitlines()
                                if line.startswith("| run |")).strip("|").split("|")]
    assert [row[2] for row in shown[:len(PROFILES)]] == list(PROFILES)
    assert 'data-target="turn-costs"' in text


def test_the_cost_per_turn_section_says_when_no_run_recorded_turns(tmp_path: Path) -> None:
    results = tmp_path / "results"
    run_from_config(composed(results, "run.turn_costs=false", "dataset.subset.first=2"))
    text = write_view(results, tmp_path / "page.html", n_boot=20).read_text(encoding="utf-8")
    costs = section(text, "turn-costs")
    assert "No run here recorded turn tables" in costs and "<table" not in costs


def test_the_judge_panel_counts_what_each_judge_graded(page: tuple[Path, str, dict]) -> None:
    _, text, _ = page
    panel = section(text, "agreement")
    assert "2 judges on the same 7 answers." in panel and "all it graded" not in panel
    table = panel[panel.index('<table class="panel">'):]
    rows = {row[0]: row[1:3] for row in body_rows(table[:table.index("</table>")])}
    assert rows["house:scripted/om-eval (run's judge)"] == ["7", "0"]
    assert rows["house/mastra:scripted/om-eval"] == ["7", "0"]
    assert "compared on" not in panel  # nothing narrowed: no note


class FailingJudge(ScriptedModel):
    """The scripted judge, except that it fails (HTTP 404) on the questions whose text is in ``doomed``."""

    def __init__(self, doomed: list[str]) -> None:
        super().__init__()
        self.doomed = doomed

    def _answer(self, messages, stage, fault):
        if stage == "judge" and any(text in messages[-1]["content"] for text in self.doomed):
            raise ScriptedModelError("404 NotFoundError: no such model", 404)
        return super()._answer(messages, stage, fault)


@pytest.fixture(scope="module")
def narrowed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A smoke run (7 answers, 3 judged correct) and a second judge failing on 4 of them (2 correct, 2 wrong):
    compared on 3 answers, 1 correct. Returns the page and the failing judge's name."""
    results = tmp_path_factory.mktemp("view-narrowed")
    run_id = run_from_config(composed(results))["run_id"]
    with Catalog(results) as catalog:
        items = catalog.items([run_id])
    right = sorted(i["question_id"] for i in items if i["label"])
    wrong = sorted(i["question_id"] for i in items if not i["label"])
    assert (len(right), len(wrong)) == (3, 4)
    doomed = [i["question"] for i in items if i["question_id"] in {*right[:2], *wrong[:2]}]
    flaky = "lenient:" + register_scripted("view-flaky", FailingJudge(doomed))
    assert main(["rejudge", run_id[:8], "judge=panel", f"judge.panel=[house,{flaky}]", "--results",
                 str(results)]) == 1  # a judge failed on some answers
    return write_view(results, results / "page.html", n_boot=20).read_text(encoding="utf-8"), flaky


def test_a_narrowed_panel_says_why_and_shows_each_judges_own_accuracy(narrowed: tuple[str, str]) -> None:
    text, flaky = narrowed
    own = "house:scripted/om-eval"
    judges = section(text, "agreement")
    panel = judges[judges.index('class="panel-run"'):]
    note = re.search(r'<p class="note panel-note">(.*?)</p>', panel).group(1)
    assert html.unescape(note) == (f"2 judges, compared on 3 of 7 answers, those every judge graded: {flaky} failed "
                                   "on 4. Accuracy on the answers compared, and in the last column on every answer "
                                   "the judge graded.")
    head = re.search(r'<table class="panel"><thead><tr>(.*?)</tr>', panel).group(1)
    names = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", head)]
    assert names[:3] == ["judge", "graded", "failed"] and names[-2:] == ["overall", "all it graded"]
    rows = {row[0]: row for row in body_rows(panel[:panel.index("</table>")])}
    mine, theirs = rows[f"{own} (run's judge)"], rows[flaky]
    assert (mine[1:3], mine[-2:]) == (["7", "0"], ["33.3%", "42.9%"])  # on the shared 3, then on its own 7
    assert (theirs[1:3], theirs[-2:]) == (["3", "4"], ["33.3%", "33.3%"])
    failures = re.search(r'<ul class="failures small">(.*?)</ul>', panel, re.DOTALL).group(1)
    assert f"{flaky} failed on 4 answers: " in html.unescape(failures) and "HTTP 404" in failures
    # the agreement table: the pair's own note and each judge's accuracy on all it graded
    agreement = judges[:judges.index('class="panel-run"')]
    assert "A on all it graded" in agreement and "B on all it graded" in agreement
    pair = cells(re.search(r"<tr><td><span class=\"mono\">(.*?)</tr>", agreement).group(0))
    assert pair[1:4] == [own, flaky, "3"] and pair[-2:] == ["42.9% of 7", "33.3% of 3"]
    said = re.search(r'<tr class="narrowed">(.*?)</tr>', agreement).group(1)
    assert html.unescape(re.sub(r"<[^>]+>", "", said)) == (
        f"compared on 3 of 7 answers, those both judges graded: {flaky} failed on 4")


def test_long_prompts_and_observations_are_cut_with_a_note() -> None:
    observations = "\n".join(f"* 🔴 (10:{i % 60:02d}) User stated: fact number {i} " + "x" * 90 for i in range(3000))
    messages = [{"role": "system", "content": "preamble\nrules"}, {"role": "system", "content": observations},
                {"role": "user", "content": "the question?"}]
    kept = clip_messages(messages)
    assert kept[0]["content"] == "preamble\nrules" and kept[-1]["content"] == "the question?"
    lines = kept[1]["content"].splitlines()
    assert len(lines) == ACTOR_HEAD_LINES + ACTOR_TAIL_LINES - 3 + 1  # the other messages' 3 lines, one note
    assert "2703 lines left out" in lines[ACTOR_HEAD_LINES - 2]
    assert len(json.dumps(kept, ensure_ascii=False).encode()) < 50_000  # from ~360 kB
    chunked = [{"role": "system", "content": "\n".join(f"m{m} line {i}" for i in range(20))} for m in range(60)]
    kept = clip_messages(chunked)
    gaps = [m for m in kept if "gap_messages" in m]
    assert len(gaps) == 1 and gaps[0]["gap_messages"] == 44 and gaps[0]["gap_lines"] == 880
    assert clip_messages(None) is None and clip_messages(messages[:1]) == messages[:1]
    assert clip_text("short\ntext", 1, 1) == "short\ntext"
    assert clip_text("a" * 5000, 10, 10).endswith("(4000 more characters)")


# ------------------------------------------------------------------------------------------------ in a browser


def chromium() -> str:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("Chromium not installed: apt-get install chromium")


def browse(path: Path, fragment: str, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, f"{path.as_uri()}#{fragment}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.integration  # starts a browser: a process
def test_chromium_draws_the_drill_down_of_two_runs_side_by_side(
        sweep: tuple[Path, str, str], page: tuple[Path, str, dict], tmp_path: Path) -> None:
    _, first, second = sweep
    path, _, data = page
    done = browse(path, f"q={KU_QUESTION}&a={first[:8]}&b={second[:8]}", tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = SCRIPTS.sub("", done.stdout)  # the embedded JSON holds the texts too: look only at what was drawn
    assert 'data-ready="1"' in dom, "the page script did not finish"
    drawn = dom[dom.index('id="detail"'):]
    assert "What is my current personal best time in the 5k?" in drawn
    assert '<span id="gold">30:28</span>' in drawn
    assert '<span class="status in_memory">captured</span>' in drawn
    answer_cells = re.compile(r'<div class="cell answer" data-run="(\w+)"><pre class="answer">(.*?)</pre>', re.DOTALL)
    answers = dict(answer_cells.findall(drawn))
    assert set(answers) == {first, second}
    for run_id in (first, second):
        assert answers[run_id] == html.escape(data["details"][run_id][KU_QUESTION]["item"]["hypothesis"], quote=False)
    assert html.escape(HOSTILE, quote=False) in drawn and "<b>cur" not in dom
    assert 'class="compare two"' in drawn and "Observations by generation" in drawn and "What the actor saw" in drawn
    # The first run's probes (rejudge --probes): the gold shown as an answer, to be accepted, and two to reject.
    assert "judge probes: 3 answers whose right verdict is known" in drawn
    assert "gold (should be accepted)" in drawn and "vague (should be rejected)" in drawn
    assert "house/mastra:scripted/om-eval" in drawn  # mastra parse, no verdict still an error: no named protocol
    # Accuracy against context and cost: the table and the two scatters (PNG data URIs) are in the drawn page.
    tradeoff = dom[dom.index('id="tradeoff"'):dom.index('id="agreement"')]
    assert tradeoff.count('<img class="tradeoff-plot" src="data:image/png;base64,') == 2
    assert "actor context / question" in tradeoff
    costs = dom[dom.index('id="turn-costs"'):dom.index('id="agreement"')]
    assert costs.count("<tr>") == 1 + 2 * len(PROFILES) and "claude-sonnet-4" in costs  # header, run x profile

    shot = tmp_path / "view.png"
    done = browse(path, f"q={KU_QUESTION}&a={first[:8]}&b={second[:8]}", tmp_path / "profile",
                  f"--screenshot={shot}", "--window-size=1280,2000", "--hide-scrollbars")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    image = pytest.importorskip("PIL.Image").open(shot).convert("RGB")
    assert image.size == (1280, 2000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 200  # text, bars, badges: far from a blank page
    most = max(count for count, _ in colours)
    assert most < 0.9 * 1280 * 2000


@pytest.mark.integration  # starts a browser: a process
def test_a_seam_systems_drill_down_shows_its_own_figures_and_none_of_oms(tmp_path: Path) -> None:
    run_id = run_from_config(composed(tmp_path, "memory=rag_mastra"))["run_id"]
    path = write_view(tmp_path, tmp_path / "report.html", n_boot=50)
    data = json.loads(DATA_BLOCK.search(path.read_text(encoding="utf-8")).group(1))
    assert [r["system"] for r in data["runs"]] == ["rag_mastra"]
    assert data["details"][run_id][KU_QUESTION]["item"]["system_detail"]["hits"] >= 1
    done = browse(path, f"q={KU_QUESTION}&a={run_id[:8]}", tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = SCRIPTS.sub("", done.stdout)
    assert 'data-ready="1"' in dom, "the page script did not finish"
    drawn = dom[dom.index('id="detail"'):]
    assert "rag_mastra: hits" in drawn and "keeps no observations" in drawn and "does not reflect" in drawn
    assert " observer, " not in drawn and "unobserved tail" not in drawn
