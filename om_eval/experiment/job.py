"""One ``om-eval run`` job: a configuration over a dataset, resumable, written to its own store file.

Per question: build (or reuse) the memory, answer, judge, then commit the item, its OM events and its model
calls in one transaction. Questions already done for this configuration are skipped, so re-invoking a run or a
sweep continues where it stopped; with the response cache, no paid call is repeated. A budget stops scheduling
new questions once reached; questions in flight finish and are saved.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import warnings
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from om_eval.bench.benchmark import Benchmark, benchmark_named
from om_eval.bench.judging.judge import Judge, NoVerdict, ParseRule
from om_eval.bench.metrics import (
    write_eval_results_jsonl,
    write_hypotheses_jsonl,
)
from om_eval.bench.pipeline import SharedBuilds
from om_eval.bench.scoring import benchmark_columns, run_metrics
from om_eval.bench.seam import BUILD_WARNINGS, figure_columns
from om_eval.common.files import atomic_write, open_lock, safe_file_name, short_hash, try_lock
from om_eval.common.secrets import scrub_secrets
from om_eval.data.records import Dataset, Question
from om_eval.experiment.spec import RunSpec
from om_eval.llm import LLMClient
from om_eval.llm.cache import ResponseCache
from om_eval.llm.ledger import CallRecord, Ledger, LedgerTotals
from om_eval.llm.stand_in import clear_responders, register_responder
from om_eval.memory.identity import haystack_hash, seam_memory_key
from om_eval.om.config import ConfigError
from om_eval.om.tokens import make_counter

if TYPE_CHECKING:
    from om_eval.store.batched import BatchedRecorder


def load_run_dataset(dataset: Mapping[str, Any]) -> Dataset:
    """The dataset a run names, loaded by its benchmark (``dataset.benchmark``; LongMemEval by default)."""
    return benchmark_named(dataset.get("benchmark")).load(dataset)


def eval_results_name(judge_model: str) -> str:
    """The official eval-results file name for a judge model (as ``evaluate_qa.py`` names it)."""
    return f"hypotheses.jsonl.eval-results-{judge_model.split('/')[-1]}"


def make_judge(spec: RunSpec) -> Any:
    """The run's judge: LongMemEval's yes/no :class:`Judge` (its templates also grade LoCoMo), or BEAM's rubric
    judge (:class:`~om_eval.bench.judging.rubric.RubricJudge`)."""
    benchmark = benchmark_named(spec.dataset.get("benchmark"))
    if spec.judge_mode not in benchmark.judge_modes:
        raise ConfigError(f"judge.mode={spec.judge_mode} cannot grade {benchmark.title}: its templates are "
                          f"LongMemEval's; use {' or '.join(benchmark.judge_modes)} (judge=house)")
    rounding = str((spec.resolved.get("beam") or {}).get("rounding", "upstream"))
    if benchmark.name != "beam" and rounding != "upstream":
        raise ConfigError(f"beam.rounding={rounding} applies to BEAM's rubric judge only: drop it, or run "
                          "dataset=beam")
    if benchmark.name == "beam":
        from om_eval.bench.judging.rubric import RubricJudge

        if spec.judge_source is not None and spec.judge_mode != "official":
            raise ConfigError(f"judge.source={spec.judge_source} reads upstream's BEAM judge prompts, which only "
                              "judge=official uses: add judge=official (or drop judge.source for the house judge)")
        if spec.judge_mode == "official":
            return RubricJudge.official(spec.judge_source, model=spec.judge_model, rounding=rounding)
        return RubricJudge.house(model=spec.judge_model, rounding=rounding)
    # Read from the run config as text: Judge checks both against its allowed values (Judge.__post_init__).
    parse, no_verdict = cast(ParseRule, spec.judge_parse), cast(NoVerdict, spec.judge_no_verdict)
    if spec.judge_mode == "official":
        return Judge.official(spec.judge_source, model=spec.judge_model, parse=parse, no_verdict=no_verdict)
    if spec.judge_mode == "house":
        return Judge.house(model=spec.judge_model, parse=parse, no_verdict=no_verdict)
    if spec.judge_mode == "lenient":
        return Judge.lenient(model=spec.judge_model, parse=parse, no_verdict=no_verdict)
    if spec.judge_mode == "panel":
        raise ConfigError("judge=panel grades stored answers under several protocols: run with one judge, then "
                          "om-eval rejudge RUN judge=panel")
    raise ConfigError(f"judge.mode={spec.judge_mode!r} is invalid: allowed values are house, official, lenient "
                      "(and panel for om-eval rejudge)")


#: How often the progress display is refreshed while no question finishes.
HEARTBEAT_SECONDS = 5.0


@dataclass
class RunProgress:
    """Running totals shown while the run goes and returned at the end."""

    total: int = 0
    skipped_done: int = 0
    done: int = 0
    errors: int = 0
    not_run: int = 0
    totals: LedgerTotals = field(default_factory=LedgerTotals)
    budget_reached: bool = False
    spent_before: float = 0.0
    """Known dollars spent by earlier invocations of the same run."""
    unpriced_before: int = 0
    """Paid calls of earlier invocations whose cost is unknown."""
    budget_unknown: bool = False
    """The budget stopped the run because some calls' cost is unknown (not because the known spend reached it)."""
    errors_seen: dict[str, int] = field(default_factory=dict)
    """Distinct error messages of failed questions, with counts."""
    finished: list[tuple[str, str]] = field(default_factory=list)
    """(question id, ``ok`` or ``error``) of the questions this invocation finished, in order."""
    warned: int = 0
    """Questions this invocation answered from a memory whose build reported warnings."""
    warnings_seen: dict[str, int] = field(default_factory=dict)
    """Distinct build warnings, with the number of questions answered from a memory that had each."""
    in_flight: Callable[[], LedgerTotals] | None = field(default=None, repr=False, compare=False)
    """The calls of the questions still being worked on (a memory being built), read when shown: the live part of
    :meth:`describe`."""
    stage: Callable[[], str | None] | None = field(default=None, repr=False, compare=False)
    """The stage of the latest call of a question in flight (``observer``, ``actor``...), read when shown."""

    def current_stage(self) -> str | None:
        return self.stage() if self.stage is not None else None

    def live(self) -> LedgerTotals:
        """Every call so far: the finished questions' and those of the questions in flight."""
        return self.totals + self.in_flight() if self.in_flight is not None else self.totals

    def describe_live(self) -> str:
        """The short form a progress bar shows beside its count: calls, tokens, dollars, the latest stage."""
        t = self.live()
        stage = self.current_stage()
        return (f"{t.calls} calls · {t.prompt_tokens + t.completion_tokens:,} tokens · ${t.cost_usd:.4f}"
                + (f" · {stage}" if stage else ""))

    def describe(self) -> str:
        t = self.live()
        return (
            f"{self.skipped_done + self.done}/{self.total} questions · {t.calls} calls ({t.cached} cached) · "
            f"{t.prompt_tokens + t.completion_tokens:,} tokens · ${t.cost_usd:.4f}"
            + (f" · {t.unknown_cost_calls} calls of unknown price" if t.unknown_cost_calls else "")
        )


def _of_this_question(error: BaseException) -> bool:
    """Whether ``error`` ends only the question it was raised in: anything but a real interrupt (Ctrl-C, SIGTERM, or
    this task being cancelled). A system's hook raising ``SystemExit`` must not take the run down."""
    if isinstance(error, KeyboardInterrupt):
        return False
    if isinstance(error, asyncio.CancelledError):
        task = asyncio.current_task()
        return task is None or not task.cancelling()
    return True


def _check_prices(roles: Mapping[str, Any], budget: float) -> None:
    """A budget is kept over known prices only: refuse, before anything runs, a role whose model has none."""
    from om_eval.llm.pricing import call_cost, price_of
    from om_eval.llm.request import litellm_model_id

    unpriced = [f"{role} ({settings.model})" for role, settings in roles.items()
                if call_cost(litellm_model_id(settings.model), 1000, 100,
                             price=price_of(settings.provider_options)) is None]
    if unpriced:
        raise ConfigError(f"run.budget_usd={budget} cannot be kept: litellm's price list has no price for "
                          f"{', '.join(unpriced)}; give each a provider_options.price (dollars per million input and "
                          "output tokens, or 'free') or run without a budget (run.budget_usd=null)",
                          option="run.budget_usd")


def _call_rows(ledger: Ledger) -> list[dict[str, Any]]:
    """The question's calls in order; the store numbers them after earlier attempts' calls."""
    return [asdict(record) for record in ledger.records]


def _derived_label(spec: RunSpec, system: Any) -> str:
    """A label without the keys of what the run does not use: ``-m prompt=current,legacy memory=om,oracle`` shows its
    one oracle run as ``memory=oracle``. The config groups a system reads (:attr:`config_groups`: OM's ``om`` and
    ``prompt``; a reader's ``baseline``) stay, and a model's keys stay when the system calls it."""
    label = spec.run.label or spec.experiment
    if (spec.resolved.get("run") or {}).get("label") is not None:
        return label  # given by the user
    models = (spec.resolved.get("models") or {}).keys()
    groups = {*system.config_groups, *(("baseline",) if spec.baseline.enabled else ())}
    unused = (*(f"{group}{sep}" for group in ("om", "prompt", "baseline") if group not in groups for sep in "=."),
              *(f"{form}{role}{sep}" for role in ("observer", "reflector", "embedding") if role not in models
                for form, sep in (("model@models.", "="), ("models.", "."))))
    kept = [word for word in label.split() if not word.lstrip("+~").startswith(unused)]
    return " ".join(kept) or spec.experiment


@dataclass
class _JournaledLedger(Ledger):
    """A question's ledger that also hands each call to ``sink`` the moment it is recorded (paid spend is noted
    before its result is used, so a kill cannot hide it)."""

    sink: Any = None

    def add(self, record: CallRecord) -> None:
        if self.sink is not None:
            try:
                self.sink(record)
            except OSError as error:  # the call is still saved with its question; only a kill would lose it now
                warnings.warn(f"could not journal a {record.stage} call ({error})", RuntimeWarning, stacklevel=2)
        super().add(record)


@asynccontextmanager
async def build_lock(results: Path, memory_key: str, question_id: str, poll_s: float = 0.05) -> AsyncIterator[None]:
    """Hold the one right to build memory ``memory_key`` for a question, across processes sharing ``results``.

    Variants that differ only in the actor or the judge share a memory. Run in parallel, each would replay it
    at the same moment and pay every observer call twice; with this lock the second waits, then replays from
    the response cache (no paid call) or reuses the first one's snapshot. ``flock`` is dropped by the kernel when
    a process dies, so a killed build never blocks anyone. The wait polls, so the event loop keeps running the
    job's other questions.
    """
    folder = results / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    fd = open_lock(folder / f"{memory_key}-{safe_file_name(question_id)}.lock")
    try:
        while not try_lock(fd):
            await asyncio.sleep(poll_s)
        yield
    finally:
        os.close(fd)  # closing drops the lock


class _HeldSnapshot:
    """A snapshot store that holds a fresh memory back, so it is committed with the question's item and events.

    Committing the snapshot on its own would let a kill between the two commits leave a memory whose OM events
    are lost for good: the resumed run would reuse the snapshot and record no events.
    """

    def __init__(self, lookup: Any) -> None:
        self.lookup = lookup
        self.held: tuple[str, str, Any, Any] | None = None
        self.events: list[dict[str, Any]] = []
        """What happened while this question built its memory (recorded with it, answered or not)."""
        self.figures: dict[str, Any] = {}
        """The system's figures about the memory the question was given (kept on its item, answered or not)."""

    def get(self, key: str, question_id: str) -> dict[str, Any] | None:
        return self.lookup.get(key, question_id)

    def put(self, key: str, question_id: str, data: Mapping[str, Any]) -> None:
        self.held = (key, question_id, data["snapshot"], data["stats"])


class RunJob:
    """Runs one :class:`RunSpec`; the store file is this job's alone."""

    def __init__(self, spec: RunSpec, *, console: Any = None) -> None:
        self.spec = spec
        self.console = console
        self.results = Path(spec.run.results_dir)
        self.run_id = spec.config_hash
        try:
            self.counter = make_counter(spec.token_estimator)
        except ValueError as error:
            option = "baseline.tokenizer" if spec.baseline.enabled else "om.token_estimator"  # a reader counts its own
            raise ConfigError(f"{option}={spec.token_estimator!r} is invalid: {error}") from None
        self.system: Any = spec.system()
        """The memory system under test (built once per job: OM's loads its prompt pack once)."""
        self.roles = spec.role_models()
        """The models the run calls, by option path (read once: each read builds the system)."""
        self.pinned = self.system.pinned_identity()
        """The identity forms of a system older than the seam (read once: a reader's hashes its prompt file)."""
        self.memory_key = self.pinned.memory_key if self.pinned is not None else \
            seam_memory_key(spec, self.system, self.counter.name)
        """The hash of the system's memory build (a pinned system's is its own form)."""
        self.benchmark: Benchmark = benchmark_named(spec.dataset.get("benchmark"))
        self.progress = RunProgress()
        self.shared = SharedBuilds(keep=max(2, spec.run.concurrency), close=self.close_build)
        """The memories questions share (LoCoMo's conversations): one build each per invocation."""
        self._scratch_numbers = itertools.count(1)
        self._credentials_checked = False
        self._judge: Judge | None = None
        self._live: dict[int, Any] = {}  # the ledgers of the questions being worked on, by id (they are unhashable)

    @property
    def label(self) -> str:
        """The run's name in reports (a derived label drops the keys of what the system does not use)."""
        return _derived_label(self.spec, self.system)

    @property
    def run_memory_key(self) -> str:
        """What the run records as its memory build: ``<name>:<hash>``, or the pinned form of a system older than the
        seam (OM's memory hash, a reader's ``baseline:<reader>``)."""
        return self.pinned.memory_key if self.pinned is not None else f"{self.system.name}:{self.memory_key}"

    def history_memory_key(self, question: Question) -> str:
        """The memory key of one question's history (its item's ``memory_key``)."""
        if self.pinned is not None and not self.pinned.per_history:
            return self.pinned.memory_key
        return f"{self.run_memory_key}-{haystack_hash(question)}"

    def memory_budget(self) -> dict[str, Any]:
        """The context budget the actor gets, as the report compares it across runs."""
        return dict(self.system.budget())

    def run_info(self, dataset: Dataset, judge: Judge | None = None) -> Any:
        from om_eval.memory.registry import system_packages
        from om_eval.store.provenance import git_state, package_versions
        from om_eval.store.records import RunInfo

        spec = self.spec
        judge = judge or make_judge(spec)
        sha, dirty = git_state(Path(__file__).resolve().parents[2])
        packages = package_versions(["om-eval", "litellm", "duckdb", "hydra-core", "tiktoken", "llama-cpp-python",
                                     "datasets", "pandas", "matplotlib",
                                     *system_packages(spec.memory_system, self.system)])
        return RunInfo(
            run_id=self.run_id,
            label=self.label,
            experiment=spec.experiment,
            created_at=datetime.now(UTC).replace(tzinfo=None),
            config_json=json.dumps(spec.resolved, sort_keys=True, default=str),
            memory_key=self.run_memory_key,
            prompt_hashes=json.dumps(self._prompt_hashes()),
            dataset_name=dataset.name,
            dataset_path=dataset.path,
            dataset_sha256=dataset.sha256,
            dataset_subset=dataset.subset,
            n_questions=len(dataset),
            git_sha=sha,
            git_dirty=dirty,
            packages=json.dumps(packages, sort_keys=True),
            observer_model=self._role_model("models.observer"),
            reflector_model=self._role_model("models.reflector"),
            actor_model=spec.actor.model,
            judge_model=spec.judge_model.model,
            judge_mode=spec.judge_mode,
            judge_identity=json.dumps(judge.identity, sort_keys=True),
            official=judge.is_official,
            token_estimator=self.counter.name,
            benchmark=dataset.benchmark,
            memory_system=spec.memory_system,
            memory_budget=self.memory_budget(),
        )

    def _prompt_hashes(self) -> dict[str, Any]:
        from om_eval.bench.seam import seam_actor_prompt_hash

        if self.pinned is not None:
            return dict(self.pinned.stored_prompts)
        return {"memory": self.system.name, "identity": dict(self.system.identity()),
                "actor": seam_actor_prompt_hash()}

    def prepare_system(self) -> None:
        """Let the system load what it reads at run time (``prompt=mastra_exact``'s pack, the paper's reader prompt)
        before anything else starts: one that cannot be had fails the run at once, not each question. A finished
        run needs nothing."""
        if not self._finished():
            self.system.prepare()
            # Only this run's system answers for the offline stand-ins: a responder an earlier run in this process
            # registered (another system's, in a sweep on the basic launcher) must not answer its calls.
            clear_responders()
            responder = self.system.offline_responder()
            if responder is not None:  # only offline stand-ins consult it; hosted models never see it
                register_responder(self.system.name, responder)

    def _role_model(self, role: str) -> str | None:
        settings = self.roles.get(role)
        return settings.model if settings is not None else None

    async def _one(self, question: Question, store: Any, snapshots: Any, client: LLMClient, judge: Judge,
                   recorder: BatchedRecorder) -> None:
        asked = question.question_id  # the sink keeps the id, not the question: services reach the ledger
        ledger = _JournaledLedger(sink=lambda record: store.journal_call(self.run_id, asked, record))
        self._live[id(ledger)] = ledger
        try:
            await self._answer_and_record(question, ledger, store, snapshots, client, judge, recorder)
        finally:
            self._live.pop(id(ledger), None)

    def in_flight(self) -> LedgerTotals:
        """The calls so far of the questions being worked on."""
        return sum((ledger.totals() for ledger in list(self._live.values())), LedgerTotals())

    def latest_stage(self) -> str | None:
        """The stage of the latest call any question in flight made (``None``: none made one yet)."""
        latest = [ledger.records[-1] for ledger in list(self._live.values()) if ledger.records]
        return max(latest, key=lambda record: record.started_at).stage if latest else None

    async def _answer_and_record(self, question: Question, ledger: Any, store: Any, snapshots: Any,
                                 client: LLMClient, judge: Judge, recorder: BatchedRecorder) -> None:
        scoped = client.with_ledger(ledger)
        key = self.history_memory_key(question)  # hashes the whole haystack: once per question
        item: dict[str, Any] = {
            "question_id": question.question_id, "question_type": question.question_type,
            "is_abstention": question.is_abstention,
            "memory_key": key,  # a failed answer's build events are filed under it
        }
        judgments: list[dict[str, Any]] = []
        held = _HeldSnapshot(snapshots)
        try:
            result = await self._through_seam(question, key, scoped, ledger, judge, held)
            item.update(result.row(), status="done")
            judgments.append(result.judgment())
            item.update(await benchmark_columns(self.benchmark, question, result.hypothesis, result.label,
                                                judge=judge, client=scoped))
            if result.judge_status != "ok":  # no verdict is an error state, retried on resume, never "wrong"
                item.update(status="error", error=f"judge: {result.error}")
        except BaseException as error:  # one failed question must not stop the run; it is retried on resume
            if not _of_this_question(error):
                raise
            message = scrub_secrets(f"{type(error).__name__}: {error}")  # printed at the end as well as stored
            item.update(status="error", judge_status="not_run", error=message)
            item.update(figure_columns(held.figures))  # the memory's own figures, as an answered item has them
        totals = ledger.totals()
        item.update(cost_usd=totals.cost_usd, unknown_cost_calls=totals.unknown_cost_calls,
                    finished_at=datetime.now(UTC).replace(tzinfo=None))
        from om_eval.store.records import QuestionRecord

        await recorder.record(QuestionRecord(item, held.events, _call_rows(ledger), held.held, judgments))
        # Counted once stored: progress lines then count saved questions, one more per line.
        if item["status"] == "done":
            self.progress.done += 1
            warnings = held.figures.get(BUILD_WARNINGS, [])  # the build's figures, as its item keeps them
            if warnings:
                self.progress.warned += 1
                for warning in warnings:
                    self._note(self.progress.warnings_seen, warning)
        else:
            self.progress.errors += 1
            self._note(self.progress.errors_seen, item["error"])
        self.progress.finished.append((question.question_id, "ok" if item["status"] == "done" else "error"))
        self._live.pop(id(ledger), None)  # its calls move to the finished totals, with no await between
        self.progress.totals = self.progress.totals + totals  # a running sum: re-adding every record is quadratic

    async def _through_seam(self, question: Question, key: str, client: LLMClient, ledger: Ledger, judge: Judge,
                            held: _HeldSnapshot) -> Any:
        """Build (or share, or restore) the question's memory with the run's system, then answer and judge through
        it (``key``: the history's memory key). A system that gives snapshots has a fresh memory held back for the
        question's commit (``held``), and restores one another run stored under the same memory key instead of
        ingesting. A fresh build's events are held with the question too (``held.events``), kept even when
        answering fails."""
        from om_eval.bench.seam import SystemBuild, build_figures_of, system_answer_and_judge, system_call
        from om_eval.bench.turn_costs import PartRecorder
        from om_eval.memory.services import HarnessServices
        from om_eval.memory.system import MemoryBuildError
        from om_eval.memory.view import history_view

        spec, system, roles = self.spec, self.system, self.roles
        services = HarnessServices(client, roles.get("models.observer"), self.counter,
                                   embedder=roles.get("models.embedding"), small=roles.get("models.small"),
                                   options=spec.memory_options,
                                   system=system.name, declares_observer=system.uses_observer_model,
                                   declares_embedding=system.uses_embedding_model)
        history = history_view(question, system.history_scope)

        def own_folder() -> Any:
            """A scratch folder for one build: two builds never share one (the same sessions in two histories, a
            memory built again after it left the shared ones)."""
            return self.results / "scratch" / self.run_id / f"{short_hash(key)}-{next(self._scratch_numbers)}"

        async def build_fresh() -> SystemBuild:
            recorder = PartRecorder(self.counter) if spec.run.turn_costs else None
            lent = replace(services, turns=recorder, scratch=own_folder())
            try:
                memory = await system_call(system.ingest(history, lent), system=system.name, what="ingest",
                                           timeout=spec.run.question_timeout_s)
            except MemoryBuildError as error:  # built, but not to be answered from: what happened is still kept
                held.events, held.figures = [dict(row) for row in error.events], error.figures
                raise
            try:
                held.events = [dict(row) for row in system.build_events(memory)]
                table = recorder.finish() if recorder is not None else None
                turns = table.to_json() if table is not None and len(table) else None
                if system.keeps_snapshots and (data := system.snapshot(memory)) is not None:
                    # As text now: data that is not JSON fails this question, not the store's commit of every one.
                    text = json.dumps(data, ensure_ascii=False)
                    held.put(key, history.id, {"snapshot": text, "stats": {"turns": turns,
                                                                             "turns_recorded": spec.run.turn_costs}})
                return SystemBuild(memory, key, reused=False, turns=turns, digest=system.memory_digest(memory),
                                   figures=build_figures_of(system, memory), scratch=lent.scratch)
            except BaseException:  # never handed on: closed here, or nothing would close it
                self.close_build(SystemBuild(memory, key, reused=False, scratch=lent.scratch))
                raise

        async def make_build() -> SystemBuild:
            if not system.keeps_snapshots:
                return await build_fresh()
            # Variants run in parallel: the second waits for the first's build, then builds from the response cache
            # (no call paid twice); a variant run later restores the memory the first committed with its question.
            async with build_lock(self.results, safe_file_name(key), history.id):
                saved = held.get(key, history.id)
                stats = (saved or {}).get("stats") or {}
                if saved is None or (spec.run.turn_costs and not stats.get("turns_recorded")):
                    return await build_fresh()  # none kept, or kept without the turn table this run records
                lent = replace(services, scratch=own_folder())
                try:
                    memory = await system_call(system.restore(saved["snapshot"], lent), system=system.name,
                                               what="restore", timeout=spec.run.question_timeout_s)
                except Exception as error:  # a snapshot of an older format, say: build it again, and say so
                    warnings.warn(f"memory={system.name}: the stored memory {key} of {history.id} could not be "
                                  f"restored ({type(error).__name__}: {error}); building it again", RuntimeWarning,
                                  stacklevel=2)
                    return await build_fresh()
                restored = SystemBuild(memory, key, reused=True, turns=stats.get("turns"), scratch=lent.scratch)
                try:
                    return replace(restored, digest=system.memory_digest(memory),
                                   figures=build_figures_of(system, memory))
                except BaseException:
                    self.close_build(restored)
                    raise

        # A history narrowed to one question's evidence (the oracle's) is that question's alone, never shared.
        shared = question.haystack_id and system.history_scope == "all"

        async def answer(build: SystemBuild) -> Any:
            held.figures = dict(build.figures or {})
            ingest = {stage: sum(r.stage == stage for r in ledger.records) for stage in ("observer", "reflector")}
            actor = spec.actor
            if system.max_output_tokens is not None:
                actor = replace(actor, max_output_tokens=system.max_output_tokens)
            answering = replace(services, answering=True, scratch=build.scratch)  # the build's folder, shared or not
            return await system_answer_and_judge(question, system, build, services=answering,
                                                 client=client, actor=actor, judge=judge, counter=self.counter,
                                                 history=history, ingest_calls=ingest,
                                                 timeout=spec.run.question_timeout_s,
                                                 max_context_tokens=spec.run.max_context_tokens)

        if shared:  # closed once no question holds it (SharedBuilds)
            async with self.shared.holding(question.memory_owner, make_build) as build:
                return await answer(build)
        build = await make_build()
        try:
            return await answer(build)
        finally:
            self.close_build(build)

    def close_build(self, build: Any) -> None:
        """The system's :meth:`~om_eval.memory.system.MemorySystemBase.close` on a memory no question will use again,
        then its scratch folder removed. A failing close is a warning: the answers are already kept."""
        try:
            self.system.close(build.memory)
        except Exception as error:
            warnings.warn(f"memory={self.system.name}: closing the memory {build.key} failed "
                          f"({type(error).__name__}: {error})", RuntimeWarning, stacklevel=2)
        if build.scratch is not None:
            shutil.rmtree(build.scratch, ignore_errors=True)

    @staticmethod
    def _note(seen: dict[str, int], message: str) -> None:
        seen[message[:300]] = seen.get(message[:300], 0) + 1

    def check_credentials(self) -> None:
        """Refuse to start a run whose models cannot be called: the first check of a run, before any data is read,
        any file downloaded or any store file made. Every role that lacks a key is named, with what to set; then
        each self-hosted endpoint is asked once whether it is up and serves the model named.

        A run with nothing left to do needs no model, so re-opening a finished run works without keys or servers.
        """
        from om_eval.llm.credentials import credentials_message, missing_credentials
        from om_eval.om.provider_options import endpoint_options

        if self._credentials_checked:
            return
        roles = self.spec.role_models()
        missing = {role: (settings.model, names) for role, settings in roles.items()
                   if (names := missing_credentials(settings.model, settings.provider_options))}
        served = any(endpoint_options(s.provider_options).get("api_base") for s in roles.values())
        if (missing or served) and self._finished():
            missing, served = {}, False
        if missing:
            raise ConfigError(credentials_message(missing))
        if self.spec.run.budget_usd and not self._finished():  # 0: the forecast only, no call is made
            _check_prices(roles, self.spec.run.budget_usd)
        if served:
            self._check_endpoints(roles)
        self._credentials_checked = True

    def _finished(self) -> bool:
        store_path = self.results / "store" / f"{self.run_id}.duckdb"
        if not store_path.exists():
            return False
        from om_eval.store.writer import RunStore

        with RunStore(store_path) as store:
            return store.finished(self.run_id)

    def saved_questions(self) -> int | None:
        """Questions of this run stored as ``done``, read back from its store file (``None``: unreadable now).

        What the store holds, not what this process counted: after a Ctrl-C the writer still commits the questions
        it was handed, after their workers stopped counting.
        """
        path = self.results / "store" / f"{self.run_id}.duckdb"
        if not path.exists():
            return 0
        import duckdb

        try:
            with duckdb.connect(str(path), read_only=True) as con:
                row = con.execute("SELECT count(*) FROM items WHERE run_id = ? AND status = 'done'",
                                  [self.run_id]).fetchone()
        except duckdb.Error:
            return None
        return int(row[0]) if row is not None else 0

    def _check_endpoints(self, roles: Mapping[str, Any]) -> None:
        from om_eval.llm.endpoints import check_endpoint
        from om_eval.om.provider_options import endpoint_options

        problems, asked = [], set()
        for role, settings in sorted(roles.items()):
            ask = (settings.model, endpoint_options(settings.provider_options).get("api_base"))
            if ask in asked:
                continue
            asked.add(ask)
            if (problem := check_endpoint(role, settings.model, settings.provider_options)) is not None:
                problems.append(problem.describe())
        if problems:
            raise ConfigError("; ".join(problems) + "; nothing was run")

    def _prepare_local_models(self) -> None:
        """Check and load every in-process model before the first question, saying each step: the first call would
        otherwise do it in silence (minutes with a cold cache, before any progress line)."""
        models = self.local_models()
        if not models:
            return
        from om_eval.llm.local import get_local_provider

        provider = get_local_provider()
        for model in models:
            provider.load(model, on_step=self._say)

    def adopt_stored_label(self) -> None:
        """Name the run as it is stored, unless ``run.label`` was given: a label derived from this command line
        (a sweep's ``prompt=current``) never renames a run (:meth:`~om_eval.store.writer.RunStore.register_run`),
        so the console says the name ``show`` and ``report`` know it by. A store busy with another writer is left
        alone: that writer's job names it."""
        if (self.spec.resolved.get("run") or {}).get("label") is not None:
            return
        path = self.results / "store" / f"{self.run_id}.duckdb"
        if not path.exists():
            return
        import duckdb

        try:
            with duckdb.connect(str(path), read_only=True) as con:
                row = con.execute("SELECT label FROM runs WHERE run_id = ?", [self.run_id]).fetchone()
        except duckdb.Error:
            return
        if row and row[0] and row[0] != self.spec.run.label:
            self.spec = replace(self.spec, run=replace(self.spec.run, label=row[0]))

    def local_models(self) -> list[str]:
        """The in-process llama.cpp models this run calls (``local/...``), each once."""
        return sorted({s.model for s in self.spec.role_models().values() if s.model.startswith("local/")})

    def _say(self, text: str) -> None:
        if self.console is not None:
            from rich.markup import escape

            self.console.print(escape(text))

    def judge(self) -> Judge:
        """The run's judge, built once (the official templates are read, or downloaded once, here)."""
        if self._judge is None:
            self._judge = make_judge(self.spec)
        return self._judge

    def load_dataset(self) -> Dataset:
        return load_run_dataset(self.spec.dataset)

    async def run(self, on_update: Any = None, dataset: Dataset | None = None) -> RunProgress:
        from om_eval.llm.threads import use_reply_executor
        from om_eval.store.batched import BatchedRecorder
        from om_eval.store.lookup import SnapshotLookup
        from om_eval.store.writer import RunStore

        use_reply_executor()  # a Ctrl-C during a model call leaves no never-awaited reply coroutine behind
        self.check_credentials()
        self.prepare_system()
        dataset = dataset or self.load_dataset()
        judge = self.judge()  # a judge that cannot be built must fail before any store file exists
        store_path = self.results / "store" / f"{self.run_id}.duckdb"
        with RunStore(store_path) as store:
            explicit_label = (self.spec.resolved.get("run") or {}).get("label") is not None
            kept = store.register_run(self.run_info(dataset, judge), keep_label=not explicit_label)
            if kept and kept != self.spec.run.label:  # a derived label yields to the one the run was stored with
                self.spec = replace(self.spec, run=replace(self.spec.run, label=kept))
            done = store.done_question_ids(self.run_id)
            todo = sum(e.question_id not in done for e in dataset.entries)
            self.progress.total = len(dataset)
            self.progress.skipped_done = len(dataset) - todo
            client = LLMClient(cache=ResponseCache(self.spec.run.cache_dir))
            snapshots = SnapshotLookup(self.results, store)
            budget = self.spec.run.budget_usd
            self.progress.spent_before = store.spent_usd(self.run_id)  # the budget covers every invocation
            self.progress.unpriced_before = store.unpriced_calls(self.run_id)
            self.progress.in_flight = self.in_flight
            self.progress.stage = self.latest_stage
            if on_update is not None:
                on_update(self.progress)
            if todo:
                self._prepare_local_models()
            # A killed run's scratch folders: a build's folder is numbered from 1 again, and must start empty.
            shutil.rmtree(self.results / "scratch" / self.run_id, ignore_errors=True)
            # Questions are read from the dataset one at a time as workers free up (S and M are streamed from
            # their file), so at most `concurrency` of them are in memory, never the whole file.
            questions = dataset.iter_questions(skip=done)
            started = 0
            recorder = BatchedRecorder(store, self.run_id)

            async def worker() -> None:
                nonlocal started
                while started < todo:
                    if budget is not None and self._over_budget(budget):
                        return
                    question = next(questions, None)  # no await between the checks and here: one taker at a time
                    if question is None:
                        return
                    started += 1
                    await self._one(question, store, snapshots, client, judge, recorder)
                    del question  # not held while waiting for the next one
                    if on_update is not None:
                        on_update(self.progress)

            async def heartbeat() -> None:
                """Shows the calls of questions in flight while nothing finishes (a memory being built)."""
                while on_update is not None:
                    await asyncio.sleep(HEARTBEAT_SECONDS)
                    on_update(self.progress)

            workers = [asyncio.ensure_future(worker()) for _ in range(min(max(1, self.spec.run.concurrency), todo))]
            beat = asyncio.ensure_future(heartbeat())
            try:
                await asyncio.gather(*workers)
            finally:
                beat.cancel()
                for task in workers:
                    task.cancel()
                try:
                    # Every worker has let go of its memory before any is closed (one may still be in a library call).
                    await asyncio.gather(*workers, return_exceptions=True)
                finally:
                    try:
                        recorder.flush()  # finished questions a cancellation left unwritten
                    finally:
                        self.shared.close_all()
                        shutil.rmtree(self.results / "scratch" / self.run_id, ignore_errors=True)
                        close = getattr(questions, "close", None)
                        if close is not None:
                            close()
            if self.progress.budget_reached:
                self.progress.not_run = todo - started
            self._export(store, dataset)
        return self.progress

    def _over_budget(self, budget: float) -> bool:
        """Checked before each question starts (questions in flight finish, so a run may pass the budget by up to
        ``run.concurrency`` questions). A call of unknown cost in this invocation counts as over: the spend can no
        longer be bounded. (Unknown costs of earlier invocations, made before the run had a price or a budget, are
        said once at the start and not counted.)"""
        progress = self.progress
        if progress.totals.unknown_cost_calls:
            progress.budget_reached = progress.budget_unknown = True
        elif progress.spent_before + progress.totals.cost_usd >= budget:
            progress.budget_reached = True
        return progress.budget_reached

    def _export(self, store: Any, dataset: Dataset) -> None:
        """Hypotheses and eval-results JSONL in the official layouts, and metrics, under results/runs/<id>."""
        rows = store.items(self.run_id)
        folder = self.results / "runs" / self.run_id
        folder.mkdir(parents=True, exist_ok=True)
        done = [r for r in rows if r["status"] == "done"]
        # Metric rows carry the judge's status (ok | error | not_run); the item's own status (done) is not one.
        judged = [{**r, "status": r["judge_status"]} for r in done]
        write_hypotheses_jsonl(folder / "hypotheses.jsonl", done)
        write_eval_results_jsonl(folder / eval_results_name(self.spec.judge_model.model), judged,
                                 judge_model=self.spec.judge_model.model)
        metrics = run_metrics(self.benchmark, judged) if judged else {}
        # Each file is replaced whole: a full disk leaves the previous invocation's file, never half of a new one.
        atomic_write(folder / "metrics.json", json.dumps(metrics, indent=1, sort_keys=True))
