"""``om-eval report``: the per-category table of every run in a results folder, or a paired comparison."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPORT_EXAMPLES = """examples:
  om-eval report                                   # every run in results/: types as rows, runs as columns
  om-eval report --wide                            # one row per run with every column (strict, cost, tokens)
  om-eval report --markdown report.md --csv report.csv   # markdown follows --wide; the CSV has every column
  om-eval report --runs 1825af23 e76636ce          # only these runs (id prefix, label or experiment)
  om-eval report --compare smoke prompt=legacy     # paired comparison: deltas, bootstrap CI, McNemar
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    report = commands.add_parser(
        "report", help="per-category table across runs, or a paired comparison of two runs",
        description="Summarise the runs stored under a results folder.", epilog=REPORT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument("--results", default="results", help="results folder (default: results)")
    report.add_argument("--runs", nargs="+", metavar="RUN",
                        help="only these runs (run id, id prefix, label or experiment)")
    report.add_argument("--wide", action="store_true",
                        help="one row per run with every column (strict accuracies, cost, tokens, compression) "
                             "instead of the compact table")
    report.add_argument("--markdown", metavar="PATH", help="also write the table as markdown (follows --wide)")
    report.add_argument("--csv", metavar="PATH", help="also write the table as CSV (always every column)")
    report.add_argument("--compare", nargs=2, metavar=("A", "B"), help="paired comparison of run B against run A")
    report.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    report.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")


def _judge_agreement(results: str, runs: list[dict[str, Any]]) -> list[str]:
    """One line per pair of judges that graded the same answers of a run (after ``om-eval rejudge``)."""
    from om_eval.report.agreement import agreement_lines, agreement_rows
    from om_eval.store import Catalog

    with Catalog(results, warn=False) as catalog:
        pairs = agreement_rows(catalog, runs)
    return agreement_lines(pairs, {r["run_id"]: r["label"] for r in runs})


def judge_sections(results: str, runs: list[dict[str, Any]], items: list[dict[str, Any]]) -> str:
    """Markdown: the official protocol's conditions once, each run's comparability verdict (the conditions it
    departs from) and judge-free floor, then its judge panel and judge quality
    where ``om-eval rejudge`` (``judge=panel``, ``--probes``) stored more than one judge or probe verdicts."""
    from om_eval.bench.benchmark import benchmark_of_run
    from om_eval.report.comparability import comparability_markdown, run_comparability
    from om_eval.report.judge_panel import (
        floor_line,
        judge_quality,
        panel_markdown,
        panel_report,
        quality_markdown,
    )
    from om_eval.report.systems import budget_warnings
    from om_eval.store import Catalog

    floors, panels, qualities, verdicts = [], [], [], []
    with Catalog(results, warn=False) as catalog:
        for run in runs:
            benchmark = benchmark_of_run(run)
            verdicts.append(run_comparability(catalog, run, benchmark))
            own = [i for i in items if i["run_id"] == run["run_id"]]
            floors.append(f"- {floor_line(run['label'] or run['run_id'][:8], own, benchmark)}")
            panel = panel_report(catalog, run["run_id"], benchmark)
            if panel is not None:
                panels.append(panel_markdown(panel, benchmark))
            quality = judge_quality(catalog, run["run_id"], benchmark)
            if quality:
                qualities.append(f"Run {run['run_id'][:12]}:\n\n" + quality_markdown(quality, benchmark))
    text = comparability_markdown(verdicts, budget_warnings(runs)) + "\n"
    text += "## Judge-free floor\n\nThe gold answer found word for word in the answer: no judge can move it.\n\n"
    text += "\n".join(floors) + "\n"
    if panels:
        text += "\n## Judge panel\n\n" + "\n".join(panels)
    if qualities:
        text += "\n## Judge quality\n\n" + "\n".join(qualities)
    return text


def _recall_section(results: str, runs: list[dict[str, Any]], items: list[dict[str, Any]]) -> str:
    """Markdown: recall calls per question and their cost, for runs whose actor had the tool (retrieval mode)."""
    from om_eval.report.recall import recall_section
    from om_eval.store import Catalog

    with Catalog(results, warn=False) as catalog:
        return recall_section(catalog, runs, items)


def _cost_sections(results: str, runs: list[dict[str, Any]], items: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    """Cost per turn with and without a provider's prompt cache, and the caches the run's calls met: as markdown
    and as console renderables (fitted tables with legends)."""
    from om_eval.report.cost_text import prompt_cache_renderables, turn_renderables
    from om_eval.report.turns import prompt_cache_rows, prompt_cache_section, turn_rows, turn_section, unrecorded_runs
    from om_eval.store import Catalog

    ids = [r["run_id"] for r in runs]
    with Catalog(results, warn=False) as catalog:
        calls = catalog.query(
            "SELECT run_id, stage, model, prompt_tokens, completion_tokens, cached, cost_usd, cached_prompt_tokens "
            f"FROM llm_calls WHERE cached_prompt_tokens IS NOT NULL AND run_id IN ({', '.join('?' for _ in ids)})",
            ids) if ids else []
    rows, missing, cache_rows = turn_rows(runs, items), unrecorded_runs(runs, items), prompt_cache_rows(runs, calls)
    parts = [turn_section(rows, missing), prompt_cache_section(cache_rows)]
    return "\n".join(part for part in parts if part), [*turn_renderables(rows, missing),
                                                       *prompt_cache_renderables(cache_rows)]


def load_runs(results: str, prefixes: list[str] | None,
              option: str = "--runs") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The runs ``prefixes`` name (each an id, id prefix, label or experiment; every run when ``None``) and their
    items. A name that matches no run or several exits with status 2, naming ``option`` and the candidates."""
    from om_eval.report.detail import find_run
    from om_eval.store import Catalog

    with Catalog(results) as catalog:
        runs = catalog.runs()
        if prefixes:
            try:
                runs = [find_run(runs, prefix) for prefix in prefixes]
            except LookupError as error:
                print(f"om-eval: {option}: {error}", file=sys.stderr)
                raise SystemExit(2) from None
        items = catalog.items([r["run_id"] for r in runs]) if runs else []
    return runs, items


def stage_calls(results: Any, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs' model calls summed per run and stage (their ingest, answer and judge cost in the table)."""
    from om_eval.report.systems import stage_usage
    from om_eval.store import Catalog

    with Catalog(results, warn=False) as catalog:
        return stage_usage(catalog, [r["run_id"] for r in runs])


def _with_suspects(results: Any, table: Any, items: list[dict[str, Any]]) -> Any:
    """The table with a note counting kept Observer replies that repeated old observations, if any."""
    from om_eval.report.tables import SUSPECT_KIND, suspect_counts, with_suspect_note
    from om_eval.store import Catalog

    with Catalog(results, warn=False) as catalog:
        events = catalog.query("SELECT DISTINCT memory_key, question_id, seq, kind FROM om_events WHERE kind = ?",
                               [SUSPECT_KIND])
    return with_suspect_note(table, suspect_counts(items, events))


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from om_eval.report import (
        comparison_to_rich,
        paired_comparison,
        summary_table,
        to_csv,
        to_markdown,
        to_rich,
    )

    console = Console()
    if args.compare:
        runs, items = load_runs(args.results, list(args.compare), "--compare")
        a, b = runs
        comparison = paired_comparison(
            [i for i in items if i["run_id"] == a["run_id"]], [i for i in items if i["run_id"] == b["run_id"]],
            n_boot=max(args.n_boot, 2000), seed=args.seed, label_a=a["label"], label_b=b["label"], run_a=a, run_b=b,
        )
        console.print(comparison_to_rich(comparison))
        return 0
    runs, items = load_runs(args.results, args.runs)
    if not runs:
        console.print(f"no runs in {args.results}/store; start one with: om-eval run experiment=smoke")
        return 1
    table = _with_suspects(args.results, summary_table(runs, items, calls=stage_calls(args.results, runs),
                                                       n_boot=args.n_boot, seed=args.seed, shorten=True), items)
    from dataclasses import replace

    from om_eval.report.departures import departure_notes

    table = replace(table, notes=(*table.notes, *departure_notes(runs)))
    wide = bool(getattr(args, "wide", False))
    console.print(to_rich(table, wide=wide))
    agreement = _judge_agreement(args.results, runs)
    if agreement:
        console.print("[bold]Judge agreement[/bold] (same answers graded by two judges; kappa = Cohen's):")
        for line in agreement:
            console.print(f"  {line}", markup=False, highlight=False)
    from om_eval.report.labels import with_display_labels

    runs = with_display_labels(runs)  # the sections below name runs as the table does
    judges = judge_sections(args.results, runs, items)
    console.print(judges, markup=False, highlight=False)
    recall = _recall_section(args.results, runs, items)
    if recall:
        console.print(recall, markup=False, highlight=False)
    costs, cost_renderables = _cost_sections(args.results, runs, items)
    for renderable in cost_renderables:
        console.print(renderable)
    if args.markdown:
        text = to_markdown(table, wide=wide)
        if agreement:
            text += "\n## Judge agreement\n\nSame answers graded by two judges; kappa is Cohen's.\n\n" + "".join(
                f"- {line}\n" for line in agreement)
        text += "\n" + judges + ("\n" + recall if recall else "") + ("\n" + costs if costs else "")
        Path(args.markdown).write_text(text, encoding="utf-8")
        console.print(f"markdown written to {args.markdown}")
    if args.csv:
        to_csv(table, args.csv)
        console.print(f"CSV written to {args.csv}")
    return 0
