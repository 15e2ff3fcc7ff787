"""Progress of ``om-eval run`` when its output is not a terminal: one plain line per finished question, condensed
for long runs."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from rich.console import Console

from om_eval.configs import CONFIG_DIR
from om_eval.experiment.app import ProgressLines, _duration, _progress_mode, run_from_config
from om_eval.experiment.job import RunProgress
from om_eval.experiment.schema import register_configs
from om_eval.llm.ledger import LedgerTotals

LINE = re.compile(r"^\[(\d+)/(\d+)\] \S+ (ok|error) · elapsed (\S+) · ETA (\S+) · \$(\d+\.\d{4})$")


@pytest.fixture
def log_console(monkeypatch: pytest.MonkeyPatch) -> tuple[Console, StringIO]:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    out = StringIO()
    return Console(file=out, width=100), out


def smoke(results: Path):
    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=["experiment=smoke", f"run.results_dir={results}",
                                            f"run.cache_dir={results / 'cache'}", "run.progress=true"])


def test_a_run_logged_to_a_file_prints_one_line_per_question(
    tmp_path: Path, log_console: tuple[Console, StringIO]
) -> None:
    console, out = log_console
    assert not console.is_terminal
    run_from_config(smoke(tmp_path), console=console)
    text = out.getvalue()
    lines = [m for m in map(LINE.match, text.splitlines()) if m]
    assert len(lines) == 7, text
    assert sorted(int(m[1]) for m in lines) == list(range(1, 8)) and {m[2] for m in lines} == {"7"}
    assert {m[3] for m in lines} == {"ok"} and lines[-1][5] == "0s"
    assert "7 questions: 0 already done, 7 to run" in text and "\x1b[" not in text

    out = StringIO()
    run_from_config(smoke(tmp_path), console=Console(file=out, width=100))  # all done: a header, no lines
    again = out.getvalue()
    assert "7 questions: 7 already done, 0 to run" in again and not any(map(LINE.match, again.splitlines()))


def test_the_eta_counts_only_questions_run_in_this_invocation() -> None:
    now = [100.0]
    out = StringIO()
    lines = ProgressLines(Console(file=out, width=200), clock=lambda: now[0])
    progress = RunProgress(total=50, skipped_done=30)
    lines(progress)  # the job's first report, before any question
    now[0] += 10
    progress.done, progress.totals = 1, LedgerTotals(cost_usd=0.0123)
    progress.finished.append(("q1", "ok"))
    lines(progress)
    now[0] += 10
    progress.errors = 1
    progress.finished.append(("q2", "error"))
    lines(progress)
    assert out.getvalue().splitlines() == [
        "50 questions: 30 already done, 20 to run",
        "[31/50] q1 ok · elapsed 10s · ETA 3m10s · $0.0123",     # 19 left x 10 s
        "[32/50] q2 error · elapsed 20s · ETA 3m00s · $0.0123",  # 18 left x 10 s
    ]


def test_the_bar_is_for_terminals_and_lines_for_everything_else() -> None:
    terminal, log = Console(file=StringIO(), force_terminal=True), Console(file=StringIO(), force_terminal=False)
    assert _progress_mode(True, terminal) == "bar" and _progress_mode(True, log) == "lines"
    assert _progress_mode("lines", terminal) == "lines"
    assert _progress_mode(False, terminal) == _progress_mode(False, log) == "off"


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (59.4, "59s"), (72, "1m12s"), (3600, "1h00m"),
                                               (7500, "2h05m"), (-3, "0s")])
def test_durations(seconds: float, text: str) -> None:
    assert _duration(seconds) == text


def _finish(progress: RunProgress, lines: ProgressLines, now: list[float], count: int, *, error_at: int = -1,
            step: float = 0.1) -> None:
    for index in range(count):
        now[0] += step
        status = "error" if index == error_at else "ok"
        progress.done += status == "ok"
        progress.errors += status == "error"
        progress.finished.append((f"q{index}", status))
        lines(progress)


def test_a_long_run_logged_to_a_file_prints_a_line_every_5_percent_every_10_s_and_every_error() -> None:
    now, out = [0.0], StringIO()
    lines = ProgressLines(Console(file=out, width=200), clock=lambda: now[0])
    progress = RunProgress(total=1986)
    lines(progress)
    _finish(progress, lines, now, 1986, error_at=7)  # 0.1 s apart: 198.6 s in all
    text = out.getvalue().splitlines()
    assert text[0] == ("1986 questions: 0 already done, 1986 to run (a line every 100 questions or 10 s, and every "
                       "error)")
    body = [m for m in map(LINE.match, text[1:]) if m]
    assert len(body) == len(text) - 1 and 20 <= len(body) <= 40  # not 1,986
    assert [m[3] for m in body].count("error") == 1 and body[-1][1] == "1986"


def test_slow_questions_print_every_10_s_and_a_terminal_still_gets_every_line() -> None:
    now, out = [0.0], StringIO()
    lines = ProgressLines(Console(file=out, width=200), clock=lambda: now[0])
    progress = RunProgress(total=100)
    lines(progress)
    _finish(progress, lines, now, 30, step=4.0)  # 4 s each: a line every third question (12 s since the last)
    assert len(out.getvalue().splitlines()) == 1 + 10

    terminal = StringIO()
    lines = ProgressLines(Console(file=terminal, width=200, force_terminal=True), clock=lambda: now[0])
    progress = RunProgress(total=1986)
    lines(progress)
    _finish(progress, lines, now, 300)
    shown = terminal.getvalue().splitlines()
    assert len(shown) == 301 and "a line every" not in shown[0]


def test_a_small_run_logged_to_a_file_keeps_one_line_per_question() -> None:
    now, out = [0.0], StringIO()
    lines = ProgressLines(Console(file=out, width=200), clock=lambda: now[0])
    progress = RunProgress(total=80, skipped_done=30)  # 50 to run: not condensed
    lines(progress)
    _finish(progress, lines, now, 50)
    assert len(out.getvalue().splitlines()) == 51


def test_while_a_memory_builds_a_line_follows_each_slow_call_with_its_stage() -> None:
    now = [100.0]
    out = StringIO()
    lines = ProgressLines(Console(file=out, width=200), clock=lambda: now[0])
    live = [LedgerTotals()]
    stage = ["observer"]
    progress = RunProgress(total=7, in_flight=lambda: live[0], stage=lambda: stage[0])
    lines(progress)
    now[0] += 31
    lines(progress)  # nothing in flight has called yet: nothing to say
    live[0] = LedgerTotals(calls=1, prompt_tokens=30_000, completion_tokens=900)
    now[0] += 5
    lines(progress)  # the first Observer call, a minute into the question
    now[0] += 4
    live[0] = LedgerTotals(calls=2, prompt_tokens=35_000, completion_tokens=1_000)
    lines(progress)  # less than 10 s since the last line: said with the next
    now[0] += 20
    lines(progress)
    now[0] += 30
    lines(progress)  # no call since: quiet until a minute has passed
    now[0] += 30
    stage[0] = "actor"
    lines(progress)
    assert out.getvalue().splitlines() == [
        "7 questions: 0 already done, 7 to run",
        "  … working: 1 call (30,900 tokens) so far for the questions in flight · latest: observer · elapsed 36s · "
        "$0.0000",
        "  … working: 2 calls (36,000 tokens) so far for the questions in flight · latest: observer · elapsed 1m00s · "
        "$0.0000",
        "  … working: 2 calls (36,000 tokens) so far for the questions in flight · latest: actor · elapsed 2m00s · "
        "$0.0000",
    ]
    assert progress.describe() == "0/7 questions · 2 calls (0 cached) · 36,000 tokens · $0.0000"
    assert progress.describe_live() == "2 calls · 36,000 tokens · $0.0000 · actor"


def test_the_bar_says_what_is_to_run_and_keeps_its_clock_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from om_eval.experiment.app import _run_with_progress

    out = StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    progress = RunProgress(total=7, in_flight=lambda: LedgerTotals(calls=123, prompt_tokens=1_234_567),
                           stage=lambda: "observer")

    class Job:
        async def run(self, *, on_update: object, dataset: object) -> RunProgress:
            on_update(progress)  # type: ignore[operator]  # the bar's update
            return progress

    asyncio.run(_run_with_progress(Job(), console, True, None))
    text = out.getvalue()
    assert "7 questions: 0 already done, 7 to run" in text
    last = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", [line for line in text.splitlines() if "0/7" in line][-1])
    assert re.search(r" 0:00:0\d ", last) and last.endswith("$0.0000 · observer") and len(last) <= 80, last
