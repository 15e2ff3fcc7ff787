"""``om-eval run``: the Hydra application (single runs and ``-m`` sweeps, any Hydra launcher).

Each job is self-contained: it reads only its resolved config, writes only its own store file under
``run.results_dir``, and shares the response cache (safe for many processes). That is all a launcher needs, so
sweeps run the same with the basic launcher, joblib (``hydra/launcher=joblib``), submitit or Ray, on one machine
or several sharing a results folder.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from om_eval.common.secrets import scrub_secrets
from om_eval.common.text import printable
from om_eval.configs import USER_CONFIG_ENV, checked_user_dir, hydra_quoted, using_user_dir

#: Where Hydra finds the shipped configs: inside the package, so an installed wheel runs from any folder.
CONFIG_PACKAGE = "pkg://om_eval.configs"
#: Set when a job in this process ended with failed questions, so the command exits non-zero.
_FAILED_JOBS: list[str] = []
#: Where a sweep's jobs report failures when they run in other processes (joblib, Ray): set through Hydra's
#: ``hydra.job.env_set`` so it reaches every worker, read back by :func:`main` once the launcher returns.
_FAILURES_ENV = "OM_EVAL_FAILED_JOBS_DIR"


def _note_failed_job(name: str) -> None:
    """Record a failed job: in this process, and for the launching process when it runs elsewhere."""
    _FAILED_JOBS.append(name)
    folder = os.environ.get(_FAILURES_ENV)
    if folder:
        try:
            Path(folder).mkdir(parents=True, exist_ok=True)
            (Path(folder) / f"{os.getpid()}-{len(_FAILED_JOBS)}-{name}").write_text(name, encoding="utf-8")
        except OSError as error:  # the job's own output already says it failed
            print(f"om-eval run: could not record the failure of {name} for the sweep ({error})", file=sys.stderr)


def _memory_side(spec: Any) -> str:
    """What answers: the memory system and the models it calls besides the actor and the judge (and Mastra's own
    prompts, when OM reads them)."""
    roles = spec.role_models()
    used = [f"{role.split('.')[-1]} {roles[role].model}" for role in
            ("models.observer", "models.reflector", "models.embedding") if role in roles]
    prompts = spec.mastra_prompts
    if prompts is not None and "prompt" in spec.system().config_groups:
        used.append(f"Mastra's prompts (@mastra/memory {prompts.version}/{prompts.variant})")
    return " · ".join([f"memory {spec.memory_system}", *used])


def _label(spec: Any, overrides: Sequence[str] | None = None) -> str:
    """The variant's name in reports: the command-line overrides that define it, else the experiment.

    A derived name only names a new run: a stored run keeps the label it was first stored with, and only a given
    ``run.label`` replaces it (:meth:`om_eval.store.writer.RunStore.register_run`).
    """
    if spec.run.label:
        return spec.run.label
    if overrides is None:
        try:
            from hydra.core.hydra_config import HydraConfig

            overrides = HydraConfig.get().overrides.task
        except Exception:  # not running under Hydra (tests call run_from_config directly)
            overrides = []
    named = [o for o in overrides if not o.startswith(("run.", "experiment=", "hydra."))]
    return " ".join(redact_override(o) for o in named) or spec.experiment


def redact_override(override: str) -> str:
    """A command-line override with its value hidden when any part of its key path names a credential.

    The label is shown in the console, the store, reports, exports and the HTML view, so
    ``+models.actor.provider_options.api_key=sk-...`` must read ``...api_key=***`` everywhere.
    """
    from om_eval.common.secrets import REDACTED, is_secret_key

    key, sep, _ = override.partition("=")
    if not sep:
        return override
    path = key.lstrip("+~").split("@")[-1]
    return f"{key}={REDACTED}" if any(is_secret_key(part) for part in path.split(".")) else override


def run_from_config(cfg: Any, *, console: Any = None, overrides: Sequence[str] | None = None) -> dict[str, Any]:
    """Run one resolved config; returns a small summary (Hydra keeps it as the job's return value).

    ``overrides`` name the variant when the config was composed outside Hydra's app (:func:`om_eval.evaluate`).
    """
    from omegaconf import OmegaConf
    from rich.console import Console

    from om_eval.experiment.estimate import print_estimate
    from om_eval.experiment.job import RunJob
    from om_eval.experiment.spec import spec_from_config

    console = console or Console()
    # A composed run config is a DictConfig with string keys: its container is a dict[str, Any].
    data = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True)) if not isinstance(cfg, dict) else cfg
    spec = spec_from_config(data)
    spec = replace(spec, run=replace(spec.run, label=_label(spec, overrides)))
    job = RunJob(spec, console=console)
    job.adopt_stored_label()
    from rich.markup import escape

    # Escaped: a label or an override may hold brackets ("[locomo_1]", "[/bold]"), which rich would read as markup.
    console.print(f"[bold]run {job.run_id}[/bold] · " + escape(
        f"{job.label} · {_memory_side(spec)} · actor {spec.actor.model} · judge "
        f"{spec.judge_mode}:{spec.judge_model.model} · store "
        f"{Path(spec.run.results_dir) / 'store' / (job.run_id + '.duckdb')}"))
    # Before anything starts, in this order: credentials (seconds), Mastra's prompts (prompt=mastra_exact: the cache,
    # else Node once), the data, the judge's templates, the forecast.
    job.check_credentials()
    job.prepare_system()
    dataset = job.load_dataset()
    job.judge()
    if spec.hosted_models:
        print_estimate(spec, dataset, console)
    stop = _StopSignals()
    try:
        with stop:
            progress = asyncio.run(_run_with_progress(job, console, spec.run.progress, dataset))
    except KeyboardInterrupt:
        # Read back, not counted: the writer commits the questions it was handed after their workers stopped.
        saved = job.saved_questions()
        counted = job.progress.skipped_done + job.progress.done  # a floor, when the store cannot be read now
        told = str(saved) if saved is not None else f"at least {counted}"
        how = "terminated (SIGTERM)" if stop.terminated else "interrupted"
        console.print(f"[yellow]{how}: {told} of {len(dataset)} questions are saved in the store; run the "
                      "same command again to continue[/yellow]")
        raise SystemExit(143 if stop.terminated else 130) from None
    summary = _print_summary(job, console)
    if progress.errors_seen:
        _note_failed_job(job.run_id)
        console.print("[red]failed questions (retried when the same command runs again):[/red]")
        for message, count in sorted(progress.errors_seen.items(), key=lambda kv: -kv[1]):
            console.print(f"  {count} x {printable(message)}", markup=False, highlight=False)
    if progress.warned:
        console.print(f"[yellow]{progress.warned} questions answered from a memory whose build reported warnings "
                      "(om-eval show <run> <question> lists them):[/yellow]")
        for message, count in sorted(progress.warnings_seen.items(), key=lambda kv: -kv[1]):
            console.print(f"  {count} x {printable(message)}", markup=False, highlight=False)
    if spec.run.budget_usd is not None and progress.unpriced_before:
        console.print(f"[yellow]note: {progress.unpriced_before} calls of earlier invocations have unknown cost; "
                      "run.budget_usd counts the known spend only[/yellow]")
    if progress.budget_unknown:
        console.print(f"[yellow]budget of ${spec.run.budget_usd} cannot be checked: a call's cost is unknown (its "
                      f"endpoint reported no usable token counts; om-eval show lists it); {progress.not_run} "
                      "questions not run. Re-run without run.budget_usd to continue[/yellow]")
    elif progress.budget_reached:
        console.print(f"[yellow]budget of ${spec.run.budget_usd} reached: {progress.not_run} questions not run; "
                      "re-run the same command with a larger run.budget_usd to continue[/yellow]")
    return summary


class _StopSignals:
    """While a run goes, Ctrl-C and SIGTERM stop it the same clean way: the questions in flight are cancelled, the
    finished ones written, the store closed, and one line says how many are saved.

    asyncio turns SIGINT into a cancellation only when its handler is Python's default; a run started in the
    background of a script inherits SIGINT *ignored*, and would then never stop on Ctrl-C. The default handler is
    put back for the run, and SIGTERM is passed on as SIGINT (``terminated`` remembers which came).
    """

    def __init__(self) -> None:
        self.terminated = False
        self._saved: dict[int, Any] = {}

    def _on_term(self, signum: int, frame: Any) -> None:
        self.terminated = True
        signal.raise_signal(signal.SIGINT)

    def __enter__(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():  # signals can be set from the main thread only
            self._saved = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
                           signal.SIGTERM: signal.signal(signal.SIGTERM, self._on_term)}
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)


def _progress_mode(setting: Any, console: Any) -> str:
    """How progress is shown: ``bar`` on a terminal, ``lines`` when output goes to a file or pipe, or ``off``.

    ``run.progress`` false turns it off; ``"lines"`` forces lines on a terminal too (where the config passes a
    string). A rich bar is silent when the console is not a terminal, so a long run logged to a file would
    otherwise print nothing until the end.
    """
    if setting is False or setting in ("off", "false"):
        return "off"
    if setting == "lines" or not (console.is_terminal or console.is_jupyter):
        return "lines"
    return "bar"


def _duration(seconds: float) -> str:
    """``42s``, ``1m12s``, ``2h05m``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


#: Condensed progress (:class:`ProgressLines`): output not a terminal and more questions to run than this.
CONDENSE_ABOVE = 50
#: Plain progress prints a line about the questions in flight when one of their calls finished and no line was printed
#: for this many seconds (a line per call of a slow model: the local Observer's take minutes) ...
WORKING_SECONDS = 10.0
#: ... and, while no call finishes, one every this many seconds (the run is alive).
STILL_WORKING_SECONDS = 60.0
#: Condensed progress prints about this many lines by count (one every 5 % of the questions to run) ...
CONDENSED_LINES = 20
#: ... and a line whenever this many seconds passed since the last one.
CONDENSED_SECONDS = 10.0


class ProgressLines:
    """Plain progress lines for logs: ``[12/50] q_id ok · elapsed 1m12s · ETA 3m40s · $0.0123``.

    One line per finished question, except when the output is not a terminal and more than
    :data:`CONDENSE_ABOVE` questions are to run (a 1,986-question LoCoMo run piped to a file). Then the lines are
    condensed: a line for every error, for the last question, and for a finished question when
    ``ceil(to run / CONDENSED_LINES)`` questions finished since the last line or :data:`CONDENSED_SECONDS` passed.
    The header line says which.

    The clock starts at the job's first report (after its setup). The ETA is the wall time per question run so
    far in this invocation (questions already done by an earlier invocation take no time and do not count) times
    the questions left; with concurrency it is a throughput.
    """

    def __init__(self, console: Any, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self.started: float | None = None
        self._seen = 0
        self.every = 1
        """Print a line every this many questions (1: every question)."""
        self._since = 0  # questions finished since the last line
        self._last = 0.0  # when the last line was printed
        self._working_calls = 0  # the calls in flight the last working line counted

    def __call__(self, progress: Any) -> None:
        if self.started is None:
            self.started = self._last = self.clock()
            to_run = progress.total - progress.skipped_done
            condensed = ""
            if to_run > CONDENSE_ABOVE and not (self.console.is_terminal or self.console.is_jupyter):
                self.every = -(-to_run // CONDENSED_LINES)
                condensed = (f" (a line every {self.every} questions or {CONDENSED_SECONDS:.0f} s, and every "
                             "error)")
            self.console.print(f"{progress.total} questions: {progress.skipped_done} already done, "
                               f"{to_run} to run{condensed}", markup=False, highlight=False)
        finished = progress.finished[self._seen:]
        self._seen += len(finished)
        if not finished:
            self._working(progress)
        if finished:
            self._working_calls = 0  # the questions in flight changed: their count starts again
        for index, (question_id, status) in enumerate(finished, start=1):
            self._since += 1
            if self.every > 1 and status == "ok" and not self._due(progress, last=index == len(finished)):
                continue
            self._since, self._last = 0, self.clock()
            self.console.print(self.line(progress, printable(f"{question_id} {status}")), markup=False, highlight=False,
                               soft_wrap=True)

    def _working(self, progress: Any) -> None:
        """A line while no question finishes: the calls so far of the questions in flight (a memory being built)
        and the stage of the latest, when a call finished and :data:`WORKING_SECONDS` passed since the last line,
        or when :data:`STILL_WORKING_SECONDS` passed without one."""
        live = progress.live()
        working = live.calls - progress.totals.calls
        if not working:
            return  # nothing in flight has called yet: nothing to say
        quiet = self.clock() - self._last
        if not ((quiet >= WORKING_SECONDS and working != self._working_calls) or quiet >= STILL_WORKING_SECONDS):
            return
        self._last, self._working_calls = self.clock(), working
        tokens = (live.prompt_tokens + live.completion_tokens) - (progress.totals.prompt_tokens
                                                                   + progress.totals.completion_tokens)
        stage = progress.current_stage()
        latest = f" · latest: {stage}" if stage else ""
        elapsed = _duration(self.clock() - (self.started or 0.0))
        calls = f"{working} call" + ("s" if working != 1 else "")
        self.console.print(f"  … working: {calls} ({tokens:,} tokens) so far for the questions in flight"
                           f"{latest} · elapsed {elapsed} · ${live.cost_usd:.4f}", markup=False, highlight=False,
                           soft_wrap=True)

    def _due(self, progress: Any, *, last: bool) -> bool:
        """Whether a condensed run prints the line of an ``ok`` question."""
        done = progress.skipped_done + progress.done + progress.errors + progress.not_run >= progress.total
        return (self._since >= self.every or self.clock() - self._last >= CONDENSED_SECONDS
                or (last and done))

    def line(self, progress: Any, status: str) -> str:
        elapsed = self.clock() - (self.started or 0.0)
        ran = progress.done + progress.errors
        finished = progress.skipped_done + ran + progress.not_run
        left = progress.total - finished
        eta = _duration(elapsed / ran * left) if ran else "?"
        totals = progress.totals
        unpriced = f" ({totals.unknown_cost_calls} calls unpriced)" if totals.unknown_cost_calls else ""
        return (f"[{finished}/{progress.total}] {status} · elapsed {_duration(elapsed)} · ETA {eta} · "
                f"${totals.cost_usd:.4f}{unpriced}")


async def _run_with_progress(job: Any, console: Any, show: Any, dataset: Any) -> Any:
    mode = _progress_mode(show, console)
    if mode == "off":
        return await job.run(dataset=dataset)
    if mode == "lines":
        return await job.run(on_update=ProgressLines(console), dataset=dataset)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.table import Column

    # The elapsed time before the description, and the description the one column that gives way (with an
    # ellipsis) on a narrow terminal: at 80 columns the time was cut to "0:…".
    columns = (TextColumn("[bold]questions"), BarColumn(bar_width=16), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.description}", table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis")))
    started = [False]
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("starting", total=None)

        def update(progress: Any) -> None:
            if not started[0]:
                started[0] = True
                bar.console.print(f"{progress.total} questions: {progress.skipped_done} already done, "
                                  f"{progress.total - progress.skipped_done} to run", markup=False, highlight=False)
            bar.update(task, total=progress.total, completed=progress.skipped_done + progress.done + progress.errors
                       + progress.not_run, description=progress.describe_live())

        return await job.run(on_update=update, dataset=dataset)


def _print_summary(job: Any, console: Any) -> dict[str, Any]:
    import json

    metrics_path = Path(job.spec.run.results_dir) / "runs" / job.run_id / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else {}
    from rich.markup import escape

    p = job.progress
    console.print(escape(
        f"run {job.run_id} ({job.spec.run.label}): {p.skipped_done} already done, {p.done} answered, "
        f"{p.errors} errors · {p.describe()}"
    ))
    if metrics.get("task_averaged") is not None:
        parts = [f"task-averaged {metrics['task_averaged']:.4f}", f"overall {metrics['overall']:.4f}"]
        if job.benchmark.abstention_row and metrics["abstention"]["accuracy"] is not None:
            parts.append(f"abstention {metrics['abstention']['accuracy']:.4f}")
        if "own" in metrics and metrics["own"]["overall"] is not None:
            parts.append(f"{metrics['own']['name']} {metrics['own']['overall']:.4f}")
        if metrics.get("answerable") and metrics["answerable"]["overall"] is not None:  # LoCoMo without category 5
            part = metrics["answerable"]
            parts.append(f"{part['title']}: overall {part['overall']:.4f}" + (
                f", {metrics['own']['name']} {part['own']['overall']:.4f}"
                if (part.get("own") or {}).get("overall") is not None else ""))
        if "corrected" in metrics:
            fixed = metrics["corrected"]
            parts.append(f"corrected gold ({fixed['changed']} answers): overall {fixed['overall']:.4f}"
                         + (f", {metrics['own']['name']} {fixed['own']['overall']:.4f}"
                            if fixed["own"]["overall"] is not None else ""))
        console.print(" · ".join(parts))
    _print_where_and_next(job, console)
    return {"run_id": job.run_id, "label": job.spec.run.label, **{k: metrics.get(k) for k in ("overall",
                                                                                            "task_averaged")}}


#: What a judge model id starts with when its verdicts are plumbing checks, and what to call it.
_PLUMBING_JUDGES = (("scripted/", "the scripted test model"), ("local/", "the small local model"))


def _print_where_and_next(job: Any, console: Any) -> None:
    """Where the run's results went and, for a single run, what to run next; a judge whose verdicts check only the
    plumbing is named as such."""
    from rich.markup import escape

    results = Path(job.spec.run.results_dir)
    console.print(escape(f"results: {results / 'store' / (job.run_id + '.duckdb')}"), soft_wrap=True)
    if job.progress.done + job.progress.skipped_done:
        console.print(escape(f"official exports: {results / 'runs' / job.run_id} (hypotheses.jsonl, the judge's "
                             "eval results, metrics.json)"), soft_wrap=True)
    else:
        console.print("no official exports: no question is done yet")
    judge = job.spec.judge_model.model
    for prefix, what in _PLUMBING_JUDGES:
        if judge.startswith(prefix):
            console.print(escape(f"note: the judge is {what} ({judge}): these scores show the pipeline works; they "
                                 "are not measurements of memory quality (a hosted judge is: judge=official)"))
    if os.environ.get(_FAILURES_ENV) is None:  # a single run; a sweep's jobs would each repeat it
        label = shlex.quote(job.spec.run.label or job.run_id)
        # The commands read results/ unless told another folder.
        where = "" if results.resolve() == Path("results").resolve() else f" --results {shlex.quote(str(results))}"
        console.print(escape(f"next: om-eval report{where} · om-eval show{where} {label} <question id> · "
                             f"om-eval view{where} ({results / 'report.html'})"), soft_wrap=True)


def _fixable_errors() -> tuple[type[Exception], ...]:
    """Failures whose message says what to do (a missing dataset or template, a bad option, a busy store)."""
    from om_eval.bench.judging.judge import OfficialTemplateError
    from om_eval.data.loader import (
        DatasetIntegrityError,
        DatasetNotFoundError,
        DatasetValidationError,
    )
    from om_eval.data.reading import PinnedFileNotFoundError
    from om_eval.llm.local import LocalModelError
    from om_eval.om.config import ConfigError
    from om_eval.om.tokens import TokenizerUnavailableError
    from om_eval.store.files import StoreError

    return (ConfigError, DatasetNotFoundError, DatasetIntegrityError, DatasetValidationError, OfficialTemplateError,
            LocalModelError, TokenizerUnavailableError, StoreError, PinnedFileNotFoundError)


def _run_job(cfg: Any) -> dict[str, Any] | None:
    """One Hydra job: a fixable failure is printed as its message (not a traceback) and fails the command.

    So is a full disk, a read-only folder or a refused permission (:mod:`om_eval.common.disk`): each question is
    saved in one transaction, so what was saved before stays and the same command continues from it.
    """
    from om_eval.common.disk import disk_problem

    _prepare_log_handlers()
    try:
        return run_from_config(cfg)
    except _fixable_errors() as error:
        print(f"om-eval run: {scrub_secrets(str(error))}", file=sys.stderr)
        _note_failed_job(type(error).__name__)
        return None
    except Exception as error:
        problem = disk_problem(error)
        if problem is None:
            raise
        print(f"om-eval run: {problem.describe(_elsewhere(cfg, problem.path))}; the questions saved so far are "
              "kept", file=sys.stderr)
        _note_failed_job("DiskProblem")
        return None


def _prepare_log_handlers() -> None:
    """Every log handler scrubs secrets from what it writes (a logged provider error may quote a key), and a log file
    on a full disk skips the records it cannot take.

    Hydra logs each job to a file in the results folder too; on a full disk every record then failed there with a
    traceback (``--- Logging error ---``). Such a file now skips them quietly: the console still shows each, and any
    other logging failure is reported as before."""
    import logging
    from types import MethodType

    from om_eval.common.disk import disk_problem

    def handle_error(handler: logging.Handler, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if error is None or disk_problem(error) is None:
            logging.Handler.handleError(handler, record)

    from om_eval.common.secrets import ScrubSecrets

    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handleError = MethodType(handle_error, handler)  # type: ignore[method-assign]
        if not any(isinstance(found, ScrubSecrets) for found in handler.filters):
            handler.addFilter(ScrubSecrets())  # a logged provider error may quote a key


def _elsewhere(cfg: Any, path: str | None) -> str:
    """Which option writes somewhere else: ``run.cache_dir`` for a path in the cache, else ``run.results_dir``."""
    try:
        cache = Path(os.path.expanduser(str(cfg["run"]["cache_dir"]))).resolve()
        inside = path is not None and Path(path).resolve().is_relative_to(cache)
    except Exception:  # a config without the key (tests pass plain dicts) or a path that does not resolve
        inside = False
    return f"point {'run.cache_dir' if inside else 'run.results_dir'} at another folder"


#: Hydra options that write no job output (help, the composed config, shell completion).
_NO_OUTPUT_OPTIONS = frozenset({"-h", "--help", "--hydra-help", "--version", "-c", "--cfg", "-i", "--info", "-sc",
                                "--shell-completion"})


def _check_results_folder(args: Sequence[str]) -> str | None:
    """A one-line refusal when the results folder cannot take Hydra's output folder, else ``None``.

    Hydra makes ``<run.results_dir>/hydra/<date>/<time>`` before any job starts, so a read-only or full results
    folder failed there with Hydra's traceback; the same check is made here first, by making (and removing) a
    folder in it (in its nearest existing parent when it does not exist yet). A results folder given as an
    interpolation or a sweep list is left to the jobs.
    """
    if _NO_OUTPUT_OPTIONS & set(args):
        return None
    from om_eval.common.disk import disk_problem

    given = [a.partition("=")[2] for a in args if a.lstrip("+").startswith("run.results_dir=")]
    if given:
        value = given[-1]
        if not value or any(c in value for c in "${}(),[]'\""):
            return None
    else:
        from om_eval.experiment.schema import RunSchema

        value = RunSchema.results_dir  # type: ignore[attr-defined]  # made by schema_of: mypy sees a bare type
    folder = Path(os.path.expanduser(value))
    # Probed in the folder, or in its nearest existing parent when it is new: a command line Hydra then rejects
    # must not leave an empty results folder behind.
    probed = folder
    while not os.path.exists(probed) and probed != probed.parent:  # False, not an error, for what cannot be read
        probed = probed.parent
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".om-eval-write-check-", dir=probed))
    except OSError as error:
        problem = disk_problem(error)  # anything else (a file in the folder's place) is left to Hydra and the job
        if problem is None:
            return None
        if problem.path and Path(problem.path).parent == probed:  # the probe's own name means nothing to the user
            problem = replace(problem, path=str(folder))
        return problem.describe("point run.results_dir at another folder")
    return None


def _user_config_dir(args: list[str]) -> str | None:
    """The absolute path of Hydra's ``--config-dir``/``-cd`` folder (the user's own configs), made absolute in
    ``args`` too; ``None`` without one.

    Raises:
        ValueError: no folder after the option, or :func:`~om_eval.configs.checked_user_dir` refuses it.
    """
    for i, arg in enumerate(args):
        name, sep, value = arg.partition("=")
        if name not in ("--config-dir", "-cd"):
            continue
        if not sep:
            if i + 1 >= len(args):
                raise ValueError(f"{name} needs a folder: {name} <folder of config groups>")
            value, at = args[i + 1], i + 1
        else:
            at = i
        folder = checked_user_dir(value, name)
        args[at] = str(folder) if not sep else f"{name}={folder}"
        return str(folder)
    return None


#: Path options a job would otherwise resolve against its own process's folder.
_PATH_OPTIONS = ("run.results_dir", "run.cache_dir")


def _anchor_paths(argv: Sequence[str], cwd: str | None = None) -> list[str]:
    """A sweep's relative ``run.results_dir`` and ``run.cache_dir`` made absolute against this folder.

    With ``-m`` the launcher may run jobs in processes that start elsewhere: a Ray worker starts in the folder its
    ``ray start`` ran in, on whichever node it lives. A relative path would then put that job's store, cache and
    Hydra log under that folder, so the paths are fixed here, before any job is dispatched. ``run.results_dir``
    left at its default becomes ``<here>/results``; absolute paths and values Hydra expands itself
    (interpolations, sweep lists) go through unchanged. Run ids do not change: both options stay out of the
    config hash. Single runs keep their arguments as given (they run in this process).
    """
    argv = list(argv)
    if not {"-m", "--multirun"} & set(argv):
        return argv
    cwd = cwd or os.getcwd()
    seen = set()
    for i, arg in enumerate(argv):
        key, sep, value = arg.lstrip("+").partition("=")
        if not sep or key not in _PATH_OPTIONS:
            continue
        seen.add(key)
        if value and value != "null" and not any(c in value for c in "${}(),[]'\"") \
                and not os.path.isabs(os.path.expanduser(value)):
            argv[i] = f"{arg[:len(arg) - len(value)]}{os.path.join(cwd, value)}"
    if "run.results_dir" not in seen:
        from om_eval.experiment.schema import RunSchema

        default = RunSchema.results_dir  # type: ignore[attr-defined]  # made by schema_of: mypy sees a bare type
        argv.append(f"run.results_dir={os.path.join(cwd, default)}")
    return argv


def main(argv: Sequence[str]) -> int:
    """Entry point for ``om-eval run [overrides] [-m]``: hands the arguments to Hydra."""
    from om_eval.experiment.schema import register_configs

    register_configs()
    _FAILED_JOBS.clear()
    args = _anchor_paths(argv)
    try:
        user_dir = _user_config_dir(args)
    except ValueError as error:
        print(f"om-eval run: {error}", file=sys.stderr)
        return 2
    if user_dir is not None:  # name lookups outside Hydra in the sweep's worker processes see it too
        args.append(f"++hydra.job.env_set.{USER_CONFIG_ENV}={hydra_quoted(user_dir)}")
    with using_user_dir(user_dir):
        return _hand_to_hydra(args)


def _hand_to_hydra(args: list[str]) -> int:
    """:func:`main` once its arguments are checked: the results folder, then Hydra (with ``sys.argv`` restored)."""
    import hydra

    saved = sys.argv
    if (refusal := _check_results_folder(args)) is not None:
        print(f"om-eval run: {refusal}; nothing was run", file=sys.stderr)
        return 1
    failures = _failure_folder(args)
    if failures is not None:
        args.append(f"++hydra.job.env_set.{_FAILURES_ENV}={failures}")
    sys.argv = ["om-eval run", *args]
    # Ray folds log lines that differ only in their numbers into one, which would hide all but one of the jobs'
    # summaries (hydra/launcher=ray prints each job's output through this process).
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    try:
        with warnings.catch_warnings():
            # om_eval/configs/hydra/launcher/ray.yaml shadows the Ray plugin's own `ray` config on purpose (see there).
            warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/ray' is validated against ConfigStore")
            hydra.main(config_path=CONFIG_PACKAGE, config_name="config", version_base="1.3")(_run_job)()
    finally:
        sys.argv = saved
        if failures is not None:
            _FAILED_JOBS.extend(path.name for path in sorted(failures.glob("*")) if path.is_file())
            shutil.rmtree(failures, ignore_errors=True)
    if failures is not None:
        print("next: om-eval report (every run, side by side) · om-eval plot · om-eval view (results/report.html)")
    return 1 if _FAILED_JOBS else 0


def _failure_folder(args: Sequence[str]) -> Path | None:
    """For a sweep, a fresh folder its jobs can reach to report failures; ``None`` for a single run.

    It lies under the sweep's results folder (a shared filesystem on a Ray cluster) when that is one plain path,
    else in this machine's temp folder (enough for joblib and a one-machine Ray cluster).
    """
    if not {"-m", "--multirun"} & set(args):
        return None
    results = [a.partition("=")[2] for a in args if a.lstrip("+").startswith("run.results_dir=")]
    plain = results and os.path.isabs(results[-1]) and not any(c in results[-1] for c in "${}(),[]'\"")
    parent = Path(results[-1]) / "hydra" if plain else Path(tempfile.gettempdir())
    return parent / f"failed-jobs-{uuid.uuid4().hex[:12]}"
