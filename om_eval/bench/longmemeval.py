"""LongMemEval (Wu et al., ICLR 2025) behind the benchmark seam: its six types and how a run loads its data.

Its score is the judge's verdict (the official templates, or the house judge), aggregated by
:mod:`om_eval.bench.metrics` exactly as ``print_qa_metrics.py`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from om_eval.bench.benchmark import Benchmark, Category
from om_eval.bench.metrics import OFFICIAL_TYPE_ORDER
from om_eval.data import load_dataset, mini_fixture_path, select
from om_eval.data.loader import dataset_from_records
from om_eval.data.records import Dataset
from om_eval.data.synth import generate

__all__ = ["BENCHMARK", "TYPE_SHORT", "TYPE_TICK", "load_longmemeval"]

#: Column headers for the six types in tables.
TYPE_SHORT = {
    "single-session-user": "SS-user",
    "single-session-preference": "SS-pref",
    "single-session-assistant": "SS-asst",
    "multi-session": "Multi-session",
    "temporal-reasoning": "Temporal",
    "knowledge-update": "Know-update",
}
#: Two-line tick labels for the six types in plots.
TYPE_TICK = {
    "single-session-user": "Single-session\nuser",
    "single-session-preference": "Single-session\npreference",
    "single-session-assistant": "Single-session\nassistant",
    "multi-session": "Multi-session",
    "temporal-reasoning": "Temporal\nreasoning",
    "knowledge-update": "Knowledge\nupdate",
}


def load_longmemeval(dataset: Mapping[str, Any]) -> Dataset:
    """The dataset a run names: the bundled mini set, a LongMemEval file, or a generated one; then its subset."""
    name = dataset["name"]
    if name == "mini":
        loaded = load_dataset(path=dataset.get("path") or mini_fixture_path())
    elif name == "synthetic":
        synth = dataset["synthetic"]
        records = generate(size=synth["size"], questions_per_type=synth["questions_per_type"],
                           abstention=synth.get("abstention"), seed=synth["seed"])
        loaded = dataset_from_records(records, name=f"synthetic-{synth['size']}-seed{synth['seed']}")
    else:
        loaded = load_dataset(name, path=dataset.get("path"), verify=dataset.get("verify", True))
    subset = {k: v for k, v in dict(dataset.get("subset") or {}).items() if v is not None and k != "seed"}
    if subset:
        loaded = select(loaded, seed=dataset["subset"].get("seed", 0), **subset)
    return loaded


BENCHMARK = Benchmark(
    name="longmemeval",
    title="LongMemEval",
    categories=tuple(Category(t, TYPE_SHORT[t], TYPE_TICK[t], gold_is_answer=t != "single-session-preference")
                     for t in OFFICIAL_TYPE_ORDER),
    load=load_longmemeval,
)
