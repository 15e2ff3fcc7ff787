"""``om-eval plot``: the comparison figures of the stored runs (deterministic PNGs)."""

from __future__ import annotations

import argparse
from pathlib import Path

from om_eval.cli.report import load_runs


def add_parser(commands: argparse._SubParsersAction) -> None:
    plot = commands.add_parser("plot", help="grouped bars, accuracy vs observation tokens, vs actor context, vs cost",
                               description="Draw the comparison plots of the stored runs (deterministic PNGs).")
    plot.add_argument("--results", default="results", help="results folder (default: results)")
    plot.add_argument("--runs", nargs="+", metavar="ID", help="only these runs (run id or a prefix of it)")
    plot.add_argument("--out", help="output folder (default: <results>/plots)")
    plot.add_argument("--seed", type=int, default=0)
    plot.add_argument("--n-boot", type=int, default=1000)


def run(args: argparse.Namespace) -> int:
    from om_eval.report import (
        plot_accuracy_vs_context,
        plot_accuracy_vs_tokens,
        plot_categories,
        plot_cost_vs_accuracy,
        summary_table,
    )

    runs, items = load_runs(args.results, args.runs)
    if not runs:
        print(f"no runs in {args.results}/store; start one with: om-eval run experiment=smoke")
        return 1
    out = Path(args.out or Path(args.results) / "plots")
    out.mkdir(parents=True, exist_ok=True)
    table = summary_table(runs, items, n_boot=args.n_boot, seed=args.seed)
    written = [
        plot_categories(table, out / "accuracy_by_category.png", n_boot=args.n_boot, seed=args.seed),
        plot_accuracy_vs_tokens(table, out / "accuracy_vs_observation_tokens.png", n_boot=args.n_boot,
                                seed=args.seed),
        plot_accuracy_vs_context(table, out / "accuracy_vs_actor_context.png", n_boot=args.n_boot, seed=args.seed),
        plot_cost_vs_accuracy(table, out / "cost_vs_accuracy.png", n_boot=args.n_boot, seed=args.seed),
    ]
    for path in written:
        print(path)
    return 0
