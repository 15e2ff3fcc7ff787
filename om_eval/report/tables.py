"""The per-category summary table across runs, rendered as markdown, CSV or a rich table.

The numbers come from :func:`om_eval.bench.metrics.metric_report` (the official LongMemEval formulas plus
graded/strict and seeded percentile-bootstrap intervals); this module only groups, sorts and formats them.

**Official and house-judged runs are never ranked together.** A house judge (our own prompts, any model) and the
official judge (verbatim templates, yes-substring parse, pinned ``gpt-4o-2024-08-06``) grade the same answer
differently, so their accuracies are not one scale. Runs are split into *sections*, one per scoring regime:

* ``official``: ``official`` is true and ``judge_mode == "official"``;
* ``non-official:<judge_mode>``: everything else (a house judge, or the official templates with any deviation).

Each section has its own heading and its own ranking (graded task-averaged accuracy, highest first, then run
id). When a table holds more than one section, the markdown and rich renderings also print a warning line
above the first section, and plots mark the non-official variants.

**Errors are states.** Items are mapped to metric rows by ``judge_status`` (``ok``, ``error``, ``not_run``): the
*graded* accuracies leave unjudged answers out (as upstream does), the *strict* ones count them wrong. The
rendered tables add the strict numbers whenever any run has an unjudged answer; the CSV always has them.

**Two layouts.** The default (*compact*) table is transposed: one row per question type (plus abstention,
overall, task-averaged), one column per run. A run then costs one narrow column (``72.0 [61–83] n=25``,
about 20 characters) instead of a wide row of 20 cells, so 3 runs fit in under 100 terminal columns and a
sweep of 6 still reads side by side, with the types in the same order as the plots. ``wide=True`` gives the
full one-row-per-run table (strict accuracies, costs, unpriced calls, observation tokens, compression).
Markdown follows the chosen layout; the CSV is always the full record.

**Untrustworthy judges are marked, not hidden.** :func:`judge_caveat` flags a run judged by a small model on
this machine (``local/...``, ``ollama/...``: a 1.5B judge got 3 of 7 verdicts wrong in a spot check), by the
scripted test model (``scripted/...``), or by an unrecorded model. Such a run keeps its numbers but carries a
``⚠`` marker and a footnote, is listed after the trusted runs of its section without a rank, and is shown
*without* a confidence interval: the bootstrap interval measures question sampling only, and printing it
would lend a precision that a judge which is often wrong does not have (the CSV still holds it).

**Unfinished runs say so.** A run with fewer items than the questions it was started on (still running, or
stopped) shows ``of <n> (unfinished)`` in its judged/n cell, and the table gains a note per such run: how many of
its questions are done, pending and failed. A finished run shows neither.

**Determinism.** Items are sorted by question id before bootstrapping (every run uses the same ``seed``), the
section and row order is fixed, and floats are printed with fixed decimals: the same rows and options give
byte-identical markdown and CSV.

**Memory systems are listed side by side, and named.** A run answered through OM, a baseline reader (stored with
``memory_key`` ``baseline:<reader>``: it answered from the raw sessions, with no memory) or a system of the memory
seam (``om-eval run memory=simple_om|rag_mastra|rag_lme|<plugin>``). It is ranked with the other runs of its
section; whenever a table holds a run not answered by OM, the compact table gains a ``memory`` row, the wide table
a ``memory`` column (``OM``, ``baseline: full context``, ``RAG (Mastra recall, top 10)``...: see
:mod:`om_eval.report.systems`), the CSV ``memory`` (``om``, ``baseline:full_context``, ``rag_mastra``...),
``memory_name`` and ``memory_budget`` columns, and a note says what each system showed the actor. When the table
compares more than one memory system, both layouts add the mean context tokens (the memory the actor was shown,
``items.context_tokens``) and the ingest and answer cost (``llm_calls`` summed by stage group, given as ``calls``);
runs that retrieved get recall_any@k at their own k, overall and per category. The CSV always has these columns.
Tables of OM runs only are unchanged.

Costs: ``cost_usd`` is the sum of the *known* spend of the run's questions; calls whose price is unknown are
counted (``unknown_cost_calls``), never guessed. ``mean_observation_tokens`` and ``mean_compression_ratio``
(raw history tokens / observation tokens, per question) are plain means over the questions that report them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from om_eval.bench.benchmark import (
    DEFAULT_BENCHMARK,
    Benchmark,
    benchmark_of_run,
    default_benchmark,
)
from om_eval.bench.metrics import metric_report, wilson_interval
from om_eval.bench.scoring import answerable_metrics
from om_eval.memory.registry import DEFAULT_SYSTEM, system_trait
from om_eval.report import _format as fmt
from om_eval.report.labels import display_labels, label_key, short_ids
from om_eval.report.systems import (
    RecallAtK,
    StageUsage,
    memory_budget_of,
    memory_name_of,
    memory_system_of,
    recall_at_k,
    usage_by_run,
)

__all__ = [
    "CAVEAT_MARK",
    "Accuracy",
    "Answerable",
    "OwnScores",
    "ReportTable",
    "RunSummary",
    "Scores",
    "Section",
    "caveat_notes",
    "judge_caveat",
    "memory_name",
    "metric_rows",
    "section_ranks",
    "summary_table",
    "suspect_counts",
    "with_suspect_note",
]

#: The marker of a run whose judge cannot be trusted (see :func:`judge_caveat`).
CAVEAT_MARK = "⚠"
#: litellm prefixes of models that run on this machine (small, often wrong as judges).
LOCAL_JUDGE_PREFIXES = ("local/", "ollama/", "ollama_chat/", "llamafile/", "lm_studio/")
#: Prefixes of the offline test models (rule-based, not language models).
TEST_JUDGE_PREFIXES = ("scripted/",)
_CAVEAT_NOTES = {
    "local judge": "scored by a small model running on this machine ({models}); such judges mis-grade many "
                   "answers (a 1.5B judge got 3 of 7 verdicts wrong in a spot check), so read these accuracies "
                   "as rough.",
    "test judge": "scored by the offline scripted test model ({models}), a rule-based tool that exercises the "
                  "pipeline; these numbers say nothing about memory quality.",
    "judge unknown": "the run did not record its judge model, so its scores cannot be traced.",
}


_BASELINE_PREFIX = "baseline:"


def _reader_of(run: Mapping[str, Any]) -> str | None:
    key = run.get("memory_key")
    if isinstance(key, str) and key.startswith(_BASELINE_PREFIX):
        return key[len(_BASELINE_PREFIX):]
    system = memory_system_of(run)
    return system if system_trait(system, "reads_history") else None


def memory_name(row: RunSummary) -> str:
    """The name of the memory system a run answered through: ``OM``, ``baseline: full context``, ``simple OM``,
    ``RAG (Mastra recall, top 10)``... (:func:`om_eval.report.systems.memory_name_of`)."""
    return row.memory


def judge_caveat(run: Mapping[str, Any] | RunSummary) -> str | None:
    """Why a run's scores need a caveat, from its judge model; ``None`` for a hosted judge.

    >>> judge_caveat({"judge_model": "local/qwen2.5-coder-1.5b"}), judge_caveat({"judge_model": "gpt-4o"})
    ('local judge', None)

    Returns:
        ``"local judge"`` (a model run on this machine: ``local/``, ``ollama/``...), ``"test judge"`` (the
        scripted model), ``"judge unknown"`` (no judge model recorded) or ``None``.
    """
    model = run.judge_model if isinstance(run, RunSummary) else run.get("judge_model")
    if not model:
        return "judge unknown"
    name = str(model).lower()
    if name.startswith(LOCAL_JUDGE_PREFIXES):
        return "local judge"
    if name.startswith(TEST_JUDGE_PREFIXES):
        return "test judge"
    return None


@dataclass(frozen=True)
class Accuracy:
    """One accuracy: the point estimate (``None`` when no row counts), its interval and its n."""

    value: float | None
    ci: tuple[float, float] | None
    n: int


@dataclass(frozen=True)
class Scores:
    """The judge's metrics of one run under one error policy (graded or strict), per category of its benchmark."""

    per_type: Mapping[str, Accuracy]
    overall: Accuracy
    task_averaged: Accuracy
    abstention: Accuracy


@dataclass(frozen=True)
class OwnScores:
    """A benchmark's own score (LoCoMo's F1) of one run: the mean per category and over all answered questions."""

    name: str
    overall: float | None
    n: int
    per_type: Mapping[str, tuple[float | None, int]]
    """Per category: (mean, n)."""
    micro: float | None = None
    """The mean over all questions, where ``overall`` is a mean of means (BEAM's; ``None`` where they agree)."""
    undefined: int = 0
    """Scores that are NaN (a BEAM event ordering whose tau-b is undefined): counted here, in no mean."""
    undefined_ids: tuple[str, ...] = ()
    """The questions whose score is NaN, so a report can name them."""


@dataclass(frozen=True)
class Answerable:
    """The aggregate most papers quote for LoCoMo: its categories 1-4, without the adversarial category 5
    (:func:`om_eval.bench.scoring.answerable_metrics` defines it)."""

    title: str
    """``categories 1-4``."""
    accuracy: Accuracy
    """Graded judge accuracy, micro over the questions of those categories, with its interval."""
    own: tuple[float | None, int] | None
    """The benchmark's own score (LoCoMo's F1), micro over their answered questions: (mean, n)."""


@dataclass(frozen=True)
class RunSummary:
    """One row of the summary table."""

    run_id: str
    short_id: str
    variant: str
    """The run's label (or short id): the key of its plot colour."""
    label: str
    """The name shown in tables and legends: ``variant`` cut to what differs between the runs shown, plus the short
    id when two would read alike (:func:`om_eval.report.labels.display_labels`)."""
    judge_mode: str | None
    judge_model: str | None
    official: bool
    """True only for runs scored exactly as upstream (``official`` flag and the official judge mode)."""
    n_items: int
    n_ok: int
    n_error: int
    n_not_run: int
    graded: Scores
    strict: Scores
    cost_usd: float
    unknown_cost_calls: int
    mean_observation_tokens: float | None
    mean_compression_ratio: float | None
    n_expected: int | None = None
    """Questions the run was started on (``runs.n_questions``); more than ``n_items`` means it is unfinished."""
    n_failed: int = 0
    """Of ``n_items``, the questions that failed (item status ``error``): tried, with no answer to score."""
    caveat: str | None = None
    """Why its scores need a caveat (:func:`judge_caveat`), or ``None``."""
    reader: str | None = None
    """The baseline reader (``full_context``, ``oracle``) of a run that built no memory; ``None`` for OM."""
    dataset: str = "?"
    """The data it ran on: file name, subset and the first characters of the file's sha256."""
    mean_observations: float | None = None
    """Observation cycles per question (times observation ran; ``None`` for runs stored before it was kept)."""
    mean_observer_call_tokens: float | None = None
    """Message tokens per Observer call, over the run (``None`` for runs stored before it was recorded)."""
    mean_raw_tail_tokens: float | None = None
    """Tokens of raw, unobserved messages the actor was shown, per question."""
    mean_actor_context_tokens: float | None = None
    """Prompt tokens of the actor's call per question: everything it read (memory, raw tail, instructions)."""
    benchmark: str = DEFAULT_BENCHMARK
    own: OwnScores | None = None
    """The benchmark's own score against the published gold (``None`` when the judge's verdict is its score)."""
    corrected: Scores | None = None
    """Graded accuracies with the corrected gold answers (``dataset.corrections``); ``None`` without corrections."""
    corrected_own: OwnScores | None = None
    n_corrected: int = 0
    answerable: Answerable | None = None
    """The aggregate over the answerable categories (LoCoMo's categories 1-4); ``None`` for a benchmark without."""
    corrected_answerable: Answerable | None = None
    """The same against the corrected gold answers (``None`` without corrections)."""
    system: str = DEFAULT_SYSTEM
    """The memory system it answered through (``om``, ``full_context``, ``rag_mastra``, a plugin's name...)."""
    memory: str = "OM"
    """That system's name as shown (:func:`memory_name`)."""
    budget: Mapping[str, Any] = field(default_factory=dict)
    """The context budget it stored (``runs.memory_budget``); empty for runs made before budgets were kept."""
    mean_context_tokens: float | None = None
    """Tokens of the memory the actor was shown, per question (``items.context_tokens``; ``None`` for older runs)."""
    usage: Mapping[str, StageUsage] | None = None
    """Calls, tokens and known spend per stage group (``ingest``, ``answer``, ``judge``:
    :func:`om_eval.report.systems.stage_group`); ``None`` when the table was built without the run's calls."""
    recall: RecallAtK | None = None
    """recall_any@k at its own k, for a run that retrieved (``items.retrieval``); ``None`` otherwise."""
    rounding: str | None = None
    """How a rubric judge rounded item scores (BEAM's ``beam.rounding``); ``None`` for a yes/no judge."""

    @property
    def ceiling(self) -> float | None:
        """The best raw score possible: 1 minus the share of questions whose published gold is known wrong."""
        return 1.0 - self.n_corrected / self.n_items if self.corrected is not None and self.n_items else None

    @property
    def complete(self) -> bool:
        return self.n_expected is None or self.n_items >= self.n_expected

    @property
    def unjudged(self) -> int:
        return self.n_error + self.n_not_run

    @property
    def cost_per_question(self) -> float | None:
        return self.cost_usd / self.n_items if self.n_items else None

    def stage(self, group: str) -> StageUsage | None:
        """The usage of one stage group (``ingest``, ``answer``, ``judge``); ``None`` when calls were not given."""
        return None if self.usage is None else self.usage.get(group, StageUsage())


@dataclass(frozen=True)
class Section:
    """Runs of one benchmark scored under one regime, ranked among themselves only."""

    key: str
    title: str
    official: bool
    rows: tuple[RunSummary, ...]
    notes: tuple[str, ...] = ()
    benchmark: Benchmark = field(default_factory=default_benchmark)
    """Whose categories its rows hold."""


@dataclass(frozen=True)
class ReportTable:
    """The summary of many runs, split into sections by scoring regime (official first)."""

    sections: tuple[Section, ...]
    n_boot: int
    seed: int
    confidence: float
    notes: tuple[str, ...] = ()

    @property
    def mixed(self) -> bool:
        """True when the runs were scored under more than one regime (official and non-official)."""
        return len(self.sections) > 1

    @property
    def rows(self) -> tuple[RunSummary, ...]:
        return tuple(row for section in self.sections for row in section.rows)

    @property
    def benchmarks(self) -> tuple[Benchmark, ...]:
        """The benchmarks of its sections, in order, each once (LongMemEval for a table without runs)."""
        return tuple({s.benchmark.name: s.benchmark for s in self.sections}.values()) or (default_benchmark(),)

    @property
    def title(self) -> str:
        """``LongMemEval results``, ``LoCoMo results``, or ``Results`` for several benchmarks."""
        found = self.benchmarks
        return f"{found[0].title} results" if len(found) == 1 else "Results"

    @property
    def has_baselines(self) -> bool:
        """True when a run is a baseline reader."""
        return any(row.reader is not None for row in self.rows)

    @property
    def shows_memory(self) -> bool:
        """True when a run did not answer through OM (the tables then name each run's memory system)."""
        return any(row.system != DEFAULT_SYSTEM for row in self.rows)

    @property
    def compares_memory(self) -> bool:
        """True when the runs answered through more than one memory system (or one system under names its budget
        changes): the tables then add context tokens, ingest and answer cost."""
        return len({row.memory for row in self.rows}) > 1

    @property
    def has_recall(self) -> bool:
        """True when a run retrieved and has recall_any@k."""
        return any(row.recall is not None for row in self.rows)

    def run(self, run_id: str) -> RunSummary:
        for row in self.rows:
            if row.run_id == run_id:
                return row
        raise KeyError(run_id)


# ------------------------------------------------------------------------------------------------- building


def metric_rows(items: Iterable[Mapping[str, Any]], *, by_id: bool = True,
                corrected: bool = False) -> list[dict[str, Any]]:
    """Store item rows as :mod:`om_eval.bench.metrics` rows, sorted by question id.

    ``status`` is the item's ``judge_status``; when that is missing it is ``ok`` for a labelled row and
    ``not_run`` otherwise. For LongMemEval (``by_id``) abstention is read from the question id (``_abs``), as
    upstream does, and an ``is_abstention`` flag that contradicts the id is an error, not something to paper
    over; another benchmark's flag is its own. ``corrected`` takes the verdict and score against the corrected
    gold where a correction applies.
    """
    rows = []
    for item in items:
        qid = item.get("question_id")
        label = item.get("label")
        score = item.get("score")
        if corrected and item.get("corrected_answer") is not None:
            label = label if item.get("corrected_label") is None else item["corrected_label"]
            score = score if item.get("corrected_score") is None else item["corrected_score"]
        status = item.get("judge_status")
        if status is None:
            status = "ok" if label is not None else "not_run"
        flag = item.get("is_abstention")
        if by_id:
            if flag is not None and isinstance(qid, str) and bool(flag) != ("_abs" in qid):
                raise ValueError(f"question {qid}: is_abstention={flag!r} contradicts the id ('_abs' marks "
                                 "abstention)")
            flag = None
        rows.append({"question_id": qid, "question_type": item.get("question_type"), "label": label,
                     "status": status, "is_abstention": flag, "score": score, "haystack_id": item.get("haystack_id")})
    return sorted(rows, key=lambda r: str(r["question_id"]))


def _scores(block: Mapping[str, Any], categories: Sequence[str]) -> Scores:
    ci = block["ci"]
    per_type = {t: Accuracy(block["per_type"][t]["accuracy"], ci["per_type"][t], block["per_type"][t]["n"])
                for t in categories}
    n = sum(a.n for a in per_type.values())
    return Scores(
        per_type=per_type,
        overall=Accuracy(block["overall"], ci["overall"], n),
        task_averaged=Accuracy(block["task_averaged"], ci["task_averaged"], n),
        abstention=Accuracy(block["abstention"]["accuracy"], ci["abstention"], block["abstention"]["n"]),
    )


def _mean(values: Iterable[Any]) -> float | None:
    present = [float(v) for v in values if not fmt.missing(v)]
    return math.fsum(present) / len(present) if present else None


def _section_of(run: Mapping[str, Any]) -> tuple[str, bool, str | None]:
    mode = run.get("judge_mode")
    official = bool(run.get("official")) and mode == "official"
    return ("official" if official else f"non-official:{mode or 'unknown'}"), official, mode


def _section_title(official: bool, mode: str | None) -> str:
    if official:
        return "Official scoring (official judge, pinned templates and judge model)"
    if mode == "official":
        return "Non-official scoring (official judge templates with a deviation from the official setup)"
    if mode is None:
        return "Non-official scoring (judge mode not recorded)"
    return f"Non-official scoring ({mode} judge)"


def _own(benchmark: Benchmark, rows: Sequence[Mapping[str, Any]]) -> OwnScores | None:
    if benchmark.own_score is None:
        return None
    done = [r for r in rows if r["status"] == "ok" or r.get("score") is not None]
    means = benchmark.own_score_means(done)
    undefined = tuple(str(r["question_id"]) for r in done
                      if isinstance(r.get("score"), float) and math.isnan(r["score"]))
    return OwnScores(benchmark.own_score, means["overall"], means["n"],
                     {k: (v["mean"], v["n"]) for k, v in means["per_type"].items()}, means.get("micro"),
                     int(means.get("nan") or 0), undefined)


def _answerable(benchmark: Benchmark, rows: Sequence[Mapping[str, Any]], confidence: float) -> Answerable | None:
    """The answerable aggregate of metric rows, with a Wilson interval (it is a proportion over questions)."""
    found = answerable_metrics(benchmark, [dict(r) for r in rows if r["status"] == "ok" or r.get("score") is not None])
    if found is None:
        return None
    n = found["n"]
    value = found["overall"]
    ci = wilson_interval(round(value * n), n, confidence) if value is not None else None
    own = (found["own"]["overall"], found["own"]["n"]) if "own" in found else None
    return Answerable(found["title"], Accuracy(value, ci, n), own)


def _summarise(run: Mapping[str, Any], items: Sequence[Mapping[str, Any]], short_id: str, label: str,
               n_boot: int, seed: int, confidence: float,
               usage: Mapping[str, StageUsage] | None = None) -> RunSummary:
    benchmark = benchmark_of_run(run)
    keys = benchmark.category_keys
    by_id = benchmark.name == DEFAULT_BENCHMARK
    rows = metric_rows(items, by_id=by_id)
    report_of = partial(metric_report, n_boot=n_boot, seed=seed, confidence=confidence, categories=keys,
                        intervals=benchmark.intervals)
    report = report_of(rows)
    counts = report["counts"]
    n_corrected = sum(1 for i in items if i.get("corrected_answer") is not None)
    corrected = corrected_own = corrected_answerable = None
    if n_corrected:
        fixed = metric_rows(items, by_id=by_id, corrected=True)
        corrected = _scores(report_of(fixed)["graded"], keys)
        corrected_own = _own(benchmark, fixed)
        corrected_answerable = _answerable(benchmark, fixed, confidence)
    _, official, mode = _section_of(run)
    budget = memory_budget_of(run)
    return RunSummary(
        run_id=str(run["run_id"]),
        short_id=short_id,
        variant=str(run.get("label") or short_id),
        label=label,
        judge_mode=mode,
        judge_model=run.get("judge_model"),
        official=official,
        n_items=counts["total"],
        n_ok=counts["ok"],
        n_error=counts["error"],
        n_not_run=counts["not_run"],
        graded=_scores(report["graded"], keys),
        strict=_scores(report["strict"], keys),
        cost_usd=math.fsum(float(i["cost_usd"]) for i in items if not fmt.missing(i.get("cost_usd"))),
        unknown_cost_calls=sum(int(i.get("unknown_cost_calls") or 0) for i in items),
        mean_observation_tokens=_mean(i.get("observation_tokens") for i in items),
        mean_compression_ratio=_mean(i.get("compression_ratio") for i in items),
        n_expected=int(run["n_questions"]) if not fmt.missing(run.get("n_questions")) else None,
        n_failed=sum(1 for i in items if i.get("status") == "error"),
        caveat=judge_caveat(run),
        reader=_reader_of(run),
        dataset=dataset_name(run),
        mean_observations=_mean(i.get("observation_cycles") for i in items),
        mean_observer_call_tokens=_per_call(items),
        mean_raw_tail_tokens=_mean(i.get("raw_tail_tokens") for i in items),
        mean_actor_context_tokens=_mean(i.get("actor_prompt_tokens") for i in items),
        benchmark=benchmark.name,
        own=_own(benchmark, rows),
        corrected=corrected,
        corrected_own=corrected_own,
        n_corrected=n_corrected,
        answerable=_answerable(benchmark, rows, confidence),
        corrected_answerable=corrected_answerable,
        system=memory_system_of(run),
        memory=memory_name_of(run),
        budget=budget,
        mean_context_tokens=_mean(i.get("context_tokens") for i in items),
        usage=usage,
        recall=recall_at_k(items, budget.get("top_k"), benchmark),
        rounding=_rounding(run),
    )


def _rounding(run: Mapping[str, Any]) -> str | None:
    """``upstream`` or ``exact`` for a run graded by BEAM's rubric judge (its judge identity says), else ``None``."""
    try:
        identity = json.loads(run.get("judge_identity") or "{}")
    except (TypeError, ValueError):
        return None
    rounding = identity.get("rounding") if isinstance(identity, dict) else None
    return f"{rounding} (int() per item)" if rounding == "upstream" else rounding


def _per_call(items: Sequence[Mapping[str, Any]]) -> float | None:
    """Observed message tokens over Observer calls, summed over the questions that recorded both."""
    pairs = [(i["observed_message_tokens"], i["observer_calls"]) for i in items
             if not fmt.missing(i.get("observed_message_tokens")) and i.get("observer_calls")]
    calls = sum(c for _, c in pairs)
    return sum(t for t, _ in pairs) / calls if calls else None


def dataset_name(run: Mapping[str, Any]) -> str:
    """``name[subset] @sha`` of a ``runs`` row: what tells two files, or two subsets of one file, apart."""
    name = str(run.get("dataset_name") or "?")
    subset = run.get("dataset_subset")
    sha = run.get("dataset_sha256")
    return name + (f"[{subset}]" if not fmt.missing(subset) and subset else "") + (
        f" @{str(sha)[:8]}" if not fmt.missing(sha) and sha else "")


def _rank_key(row: RunSummary) -> tuple[bool, bool, float, str]:
    value = row.graded.task_averaged.value
    return (row.caveat is not None, fmt.missing(value), -(value or 0.0), row.run_id)


def section_ranks(section: Section) -> list[int | None]:
    """The rank of each row of a section (1, 2, ...); ``None`` for runs with a judge caveat (listed last)."""
    out: list[int | None] = []
    for row in section.rows:
        out.append(None if row.caveat else len([r for r in out if r is not None]) + 1)
    return out


def summary_table(runs: Sequence[Mapping[str, Any]], items: Iterable[Mapping[str, Any]], *,
                  calls: Iterable[Mapping[str, Any]] | None = None, n_boot: int = 1000, seed: int = 0,
                  confidence: float = 0.95, shorten: bool = False) -> ReportTable:
    """One row per run: per-type accuracy with CI and n, overall, task-averaged, abstention, cost, memory size.

    Args:
        runs: rows of the store's ``runs`` table (``run_id``, ``label``, ``judge_mode``, ``official``,
            ``judge_model`` are read).
        items: rows of the ``items`` table for those runs (``run_id``, ``question_id``, ``question_type``,
            ``label``, ``judge_status``, ``cost_usd``, ``unknown_cost_calls``, ``observation_tokens``,
            ``compression_ratio``, ``context_tokens``, ``retrieval``). Items of runs not listed are ignored and
            counted in ``notes``.
        calls: the runs' model calls, as sums per run and stage (:func:`om_eval.report.systems.stage_usage`) or
            plain ``llm_calls`` rows: each run's ingest, answer and judge cost. ``None``: not shown.
        n_boot, seed, confidence: the percentile bootstrap (the same seed for every run).
        shorten: name runs by what differs between them (:func:`~om_eval.report.labels.display_labels`, with a
            key in ``notes``), for a terminal's columns; by default each stored label is kept whole (plots and the
            page wrap them).

    Returns:
        A :class:`ReportTable` with one section per scoring regime (official first), each ranked by graded
        task-averaged accuracy (highest first; runs without one last), ties broken by run id. Runs with a
        :func:`judge_caveat` come after the trusted ones, unranked.

    Raises:
        ValueError: for a duplicate run id, an item without a run id, or an invalid item (see
            :func:`om_eval.bench.metrics.longmemeval_metrics`).
    """
    run_ids = [str(r["run_id"]) for r in runs]
    if len(set(run_ids)) != len(run_ids):
        raise ValueError("runs: a run id appears twice")
    by_run: dict[str, list[Mapping[str, Any]]] = {rid: [] for rid in run_ids}
    stray = 0
    for item in items:
        rid = item.get("run_id")
        if rid is None:
            raise ValueError(f"item {item.get('question_id')!r} has no run_id")
        if str(rid) in by_run:
            by_run[str(rid)].append(item)
        else:
            stray += 1
    usage = usage_by_run(calls) if calls is not None else None
    short = short_ids(run_ids)
    labels = display_labels(runs) if shorten else display_labels(runs, whole=True)

    grouped: dict[str, list[RunSummary]] = {}
    regimes: dict[str, tuple[bool, str | None, Benchmark]] = {}
    for run, rid in zip(runs, run_ids):
        key, official, mode = _section_of(run)
        benchmark = benchmark_of_run(run)
        if benchmark.name != DEFAULT_BENCHMARK:  # one benchmark's categories never share a table with another's
            key = f"{benchmark.name}:{key}"
        regimes[key] = (official, mode, benchmark)
        grouped.setdefault(key, []).append(
            _summarise(run, by_run[rid], short[rid], labels[rid], n_boot, seed, confidence,
                       None if usage is None else usage.get(rid, {})))

    sections = []
    several = len({b.name for _, _, b in regimes.values()}) > 1
    for key in sorted(grouped, key=lambda k: (":" in k.split("non-official")[0], k != "official", k)):
        official, mode, benchmark = regimes[key]
        rows = tuple(sorted(grouped[key], key=_rank_key))
        judges = sorted({str(r.judge_model) for r in rows})
        section_notes = (f"Judge models differ within this section ({', '.join(judges)}).",) if len(judges) > 1 else ()
        title = _section_title(official, mode)
        if several or benchmark.name != DEFAULT_BENCHMARK:
            title = f"{benchmark.title}: {title}"
        sections.append(Section(key, title, official, rows, section_notes, benchmark))
    notes: tuple[str, ...] = (f"{fmt.plural(stray, 'item')} of runs not in this table "
                               f"{'was' if stray == 1 else 'were'} ignored.",) if stray else ()
    if key := label_key(runs, labels):
        notes += (key,)
    notes += tuple(_unfinished_note(row) for section in sections for row in section.rows if not row.complete)
    datasets = sorted({row.dataset for section in sections for row in section.rows})
    if len(datasets) > 1:
        notes += (f"These runs used different data ({'; '.join(datasets)}): their scores are not comparable "
                  "question for question (see the dataset row).",)
    return ReportTable(tuple(sections), n_boot, seed, confidence, notes)


# ------------------------------------------------------------------------------------------------ notes


def caveat_notes(rows: Iterable[RunSummary]) -> list[str]:
    """One footnote per kind of judge caveat among ``rows``: which runs, which judge, why it matters."""
    by_kind: dict[str, list[RunSummary]] = {}
    for row in rows:
        if row.caveat:
            by_kind.setdefault(row.caveat, []).append(row)
    notes = []
    for kind in sorted(by_kind):
        members = by_kind[kind]
        models = ", ".join(sorted({str(r.judge_model) for r in members if r.judge_model})) or "?"
        text = _CAVEAT_NOTES.get(kind, "the judge is not trusted.").format(models=models)
        notes.append(f"{CAVEAT_MARK} {kind} ({', '.join(r.label for r in members)}): {text} Listed unranked "
                     "and without confidence intervals, which cover question sampling, not judge error (the CSV "
                     "has them).")
    return notes


def _unfinished_note(row: RunSummary) -> str:
    """The line that says a run is unfinished: how many of its questions are done, failed and not tried yet."""
    done, pending = row.n_items - row.n_failed, (row.n_expected or row.n_items) - row.n_items
    failed = f", {row.n_failed} failed" if row.n_failed else ""
    return (f"Unfinished: {row.label} has {done} of {row.n_expected} questions done ({pending} pending{failed}); "
            "its scores cover only the questions done.")


SUSPECT_KIND = "observation_suspect"


def suspect_counts(items: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Per run id, the ``observation_suspect`` events of the memory builds its items used.

    ``events`` are ``om_events`` rows (``memory_key``, ``question_id``, ``seq``, ``kind``); an event of a memory
    shared by several runs counts for each of them. Runs without such events are left out.
    """
    by_build: dict[tuple[Any, Any], set[Any]] = {}
    for event in events:
        if event.get("kind", SUSPECT_KIND) == SUSPECT_KIND:
            by_build.setdefault((event["memory_key"], event["question_id"]), set()).add(event.get("seq"))
    counts: dict[str, int] = {}
    seen: set[tuple[str, Any, Any]] = set()
    for item in items:
        owner = item.get("haystack_id") or item.get("question_id")  # a shared memory counts once per run
        build = (str(item["run_id"]), item.get("memory_key"), owner)
        if build in seen:
            continue
        seen.add(build)
        found = len(by_build.get(build[1:], ()))
        if found:
            counts[str(item["run_id"])] = counts.get(str(item["run_id"]), 0) + found
    return counts


def with_suspect_note(table: ReportTable, counts: Mapping[str, int]) -> ReportTable:
    """``table`` with one more note when some of its runs kept Observer replies that looked like repeats of old
    observations (:func:`suspect_counts`); unchanged otherwise."""
    found = [(row.label, counts[row.run_id]) for row in table.rows if counts.get(row.run_id)]
    if not found:
        return table
    total = sum(n for _, n in found)
    replies = "reply" if total == 1 else "replies"
    runs = ", ".join(f"{label}: {n}" for label, n in found)
    note = (f"{CAVEAT_MARK} {total} observer {replies} looked like repeats of old observations "
            f"({SUSPECT_KIND}; {runs}). `om-eval show` lists them per question.")
    return replace(table, notes=(*table.notes, note))
