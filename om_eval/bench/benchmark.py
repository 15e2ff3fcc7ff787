"""The benchmark seam: what the pipeline, store and reports need to know about a benchmark, in one object.

A benchmark is one module ``om_eval.bench.<name>`` that defines ``BENCHMARK`` (a :class:`Benchmark`), and one
dataset config file ``om_eval/configs/dataset/<name>.yaml`` that names it (``benchmark: <name>``). Everything above this
layer (the run job, the store, ``report``, ``plot``, ``show``, ``view``) asks the benchmark of a run for its
categories, its own score and how it loads; none of it lists a benchmark's categories itself.

Two are defined: LongMemEval (:mod:`om_eval.bench.longmemeval`, the default) and LoCoMo
(:mod:`om_eval.bench.locomo`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from om_eval.data.records import Dataset, Question
from om_eval.om.config import ConfigError

__all__ = ["DEFAULT_BENCHMARK", "Benchmark", "Category", "benchmark_named", "benchmark_of_run", "default_benchmark",
           "house_route"]

DEFAULT_BENCHMARK = "longmemeval"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
#: The house judge's template per question type of every benchmark defined so far (a benchmark's questions exist
#: only once its module has run, so its routes are known before any of them is judged).
_HOUSE_ROUTES: dict[str, str] = {}


@dataclass(frozen=True)
class Category:
    """One question category of a benchmark, as stored (``items.question_type``) and as shown."""

    key: str
    """The stored question type."""
    short: str
    """Its column header in tables."""
    tick: str
    """Its tick label in plots (may hold a line break)."""
    number: int | None = None
    """The benchmark's own number for it (LoCoMo's 1-5), shown beside the name: vendors renumber them."""
    gold_is_answer: bool = True
    """False when its gold is a rubric rather than an answer (LongMemEval's preference questions): judge-free
    matching (:mod:`om_eval.bench.judging.matching`) leaves it out."""

    @property
    def title(self) -> str:
        """``4 single-hop`` where the benchmark numbers its categories, else the key."""
        return self.key if self.number is None else f"{self.number} {self.key}"


@dataclass(frozen=True)
class Benchmark:
    """A benchmark as the rest of om-eval sees it."""

    name: str
    title: str
    categories: tuple[Category, ...]
    """In the order the benchmark lists (and sums) them."""
    load: Callable[[Mapping[str, Any]], Dataset] = field(repr=False)
    """The run's ``dataset`` config group to a :class:`Dataset` (subsets applied)."""
    abstention_row: bool = True
    """Reports show an abstention row (LongMemEval's ``_abs`` questions cross its types); LoCoMo's unanswerable
    questions are a category of their own, so it has none."""
    own_score: str | None = None
    """The name of the benchmark's own answer score (LoCoMo's ``F1``), reported beside the judge's accuracy;
    ``None`` when the judge's verdict is the benchmark's score."""
    scorer: Callable[[Question, str, str | int], float] | None = field(default=None, repr=False)
    """``scorer(question, prediction, gold)``: the benchmark's own score of one answer against a gold answer."""
    judge_modes: tuple[str, ...] = ("house", "official", "lenient")
    """The ``judge.mode`` values that can grade it (the official LongMemEval templates grade only LongMemEval)."""
    intervals: str = "bootstrap"
    """How per-category accuracy intervals are drawn: ``bootstrap`` (percentile, over questions) or ``wilson``."""
    house_routes: Mapping[str, str] = field(default_factory=dict)
    """Which house judge template grades each category (``answer``, ``temporal``, ``update``, ``preference``,
    ``abstention``); LongMemEval's own are in :data:`om_eval.bench.judging.judge.HOUSE_ROUTES`."""
    identity: Mapping[str, Any] = field(default_factory=dict)
    """What, beyond the data, makes its scores differ (its judge routes, its scoring revision): in run ids of
    every benchmark but the default."""
    own_means: Callable[[Iterable[Mapping[str, Any]], Sequence[str]], dict[str, Any]] | None = field(default=None,
                                                                                                   repr=False)
    """How its own score is averaged, ``own_means(rows, categories)`` in :func:`om_eval.bench.metrics.score_means`'s
    shape (``overall``, ``n``, ``per_type``; more keys allowed); ``None``: micro means (LoCoMo's F1). BEAM averages
    per chat, then over chats."""
    reply_score: Callable[[str, str | None], float | None] | None = field(default=None, repr=False)
    """``reply_score(question_type, judge_reply)``: the answer's own score recomputed from what its judge replied,
    for a benchmark whose judge scores (BEAM); ``None``: the score comes from :attr:`scorer` (or there is none)."""
    verdict_name: str = "accuracy"
    """What the judge's yes/no verdicts measure, as reports name it (BEAM's: full marks on every rubric item)."""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"benchmark name {self.name!r} must be a Python module name")
        if len({c.key for c in self.categories}) != len(self.categories):
            raise ValueError(f"benchmark {self.name}: a category key appears twice")
        clash = {k for k, v in self.house_routes.items() if _HOUSE_ROUTES.get(k, v) != v}
        if clash:
            raise ValueError(f"benchmark {self.name}: categories {sorted(clash)} are routed differently elsewhere")
        _HOUSE_ROUTES.update(self.house_routes)

    @property
    def category_keys(self) -> tuple[str, ...]:
        return tuple(c.key for c in self.categories)

    def category(self, key: str) -> Category:
        for category in self.categories:
            if category.key == key:
                return category
        raise KeyError(f"{key!r} is not a {self.title} category ({', '.join(self.category_keys)})")

    @property
    def unmatched_keys(self) -> tuple[str, ...]:
        """Categories whose gold is not an answer to match."""
        return tuple(c.key for c in self.categories if not c.gold_is_answer)

    @property
    def legend(self) -> str:
        """One line that says what each column header stands for."""
        named = "; ".join(f"{c.short} = {c.title}" for c in self.categories if c.short != c.title)
        return f"{'Categories' if self.categories[0].number is not None else 'Types'}: {named}." if named else ""

    def own_score_means(self, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Means of its own score over ``rows`` (``question_type``, ``score``, ``haystack_id``), as it averages."""
        from om_eval.bench.metrics import score_means

        if self.own_means is not None:
            return self.own_means(rows, self.category_keys)
        return score_means(rows, self.category_keys)

    def score(self, question: Question, prediction: str | None, gold: str | int | None = None) -> float | None:
        """The benchmark's own score of ``prediction`` (against ``gold``, by default the question's answer);
        ``None`` when it has none or nothing was answered."""
        if self.scorer is None or prediction is None:
            return None
        return float(self.scorer(question, prediction, question.answer if gold is None else gold))


def house_route(question_type: str) -> str | None:
    """The house judge template a benchmark routes ``question_type`` to, or ``None``. A type no benchmark defined so
    far knows makes every benchmark module under ``om_eval/bench/`` load once (questions can be built from the data
    layer alone, before their benchmark's module ran)."""
    if question_type not in _HOUSE_ROUTES:
        _load_all()
    return _HOUSE_ROUTES.get(question_type)


@lru_cache(maxsize=1)
def _load_all() -> None:
    import pkgutil

    import om_eval.bench as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.name != "benchmark" and not module.ispkg:
            importlib.import_module(f"om_eval.bench.{module.name}")  # a BENCHMARK registers its routes


def benchmark_named(name: str | None) -> Benchmark:
    """The benchmark of module ``om_eval.bench.<name>`` (``None``: LongMemEval).

    Raises:
        ConfigError: naming ``dataset.benchmark``, when no such module defines a ``BENCHMARK``.
    """
    name = name or DEFAULT_BENCHMARK
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"dataset.benchmark={name!r} is invalid: a benchmark is named by its module "
                          "(longmemeval, locomo)")
    try:
        module = importlib.import_module(f"om_eval.bench.{name}")
    except ModuleNotFoundError:
        module = None
    found = getattr(module, "BENCHMARK", None)
    if not isinstance(found, Benchmark):
        raise ConfigError(f"dataset.benchmark={name!r} is unknown: add om_eval/bench/{name}.py defining BENCHMARK, "
                          "or use longmemeval or locomo")
    return found


def default_benchmark() -> Benchmark:
    """LongMemEval: the benchmark of anything that names none (runs stored before benchmarks were recorded)."""
    return benchmark_named(DEFAULT_BENCHMARK)


def benchmark_of_run(run: Mapping[str, Any]) -> Benchmark:
    """The benchmark a ``runs`` row was scored on (runs stored before benchmarks were recorded: LongMemEval)."""
    return benchmark_named(run.get("benchmark") or DEFAULT_BENCHMARK)
