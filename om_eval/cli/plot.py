"""``om-eval plot``: the comparison figures of the stored runs (deterministic PNG, PDF or SVG) and their notes."""

from __future__ import annotations

import argparse
from pathlib import Path

PLOT_EXAMPLES = """examples:
  om-eval plot                                     # PNGs and NOTES.md (captions, caveats) in results/plots/
  om-eval plot --format pdf --no-notes             # PDFs for a paper, no notes file
  om-eval plot --format png --dpi 300 --out figs   # print-resolution PNGs in figs/
  om-eval plot --profile claude-sonnet-4           # turn-cost figures at Claude's prices and caching rules
"""
#: The figure formats, spelled out so that ``--help`` imports no matplotlib (a test keeps them in step).
FORMATS = ("png", "pdf", "svg")
DEFAULT_DPI = 100
#: The price profiles of the turn-cost figures (``om_eval.llm.cache_profiles.PROFILES``), spelled out so that
#: ``--help`` imports no model code (a test keeps them in step).
PROFILES = ("gpt-4o", "gpt-5-mini", "gemini-2.5-flash", "claude-sonnet-4")
DEFAULT_PROFILE = "gpt-5-mini"


def _dpi(text: str) -> int:
    value = int(text)
    if not 10 <= value <= 2400:
        raise argparse.ArgumentTypeError(f"{value}: give a resolution from 10 to 2400 dots per inch")
    return value


def add_parser(commands: argparse._SubParsersAction) -> None:
    plot = commands.add_parser(
        "plot", help="grouped bars, accuracy vs observation tokens, vs actor context, vs cost; cost per turn",
        description="Draw the comparison figures of the stored runs (the same runs and options give the same\n"
                    "bytes) and write their captions and caveats to NOTES.md beside them. Runs that recorded\n"
                    "turn tables add prompt tokens, cached share and cumulative cost per user turn.",
        epilog=PLOT_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    plot.add_argument("--results", default="results", help="results folder (default: results)")
    plot.add_argument("--runs", nargs="+", metavar="RUN", help="only these runs (as for om-eval report --runs)")
    plot.add_argument("--out", help="output folder (default: <results>/plots)")
    plot.add_argument("--format", choices=FORMATS, default="png", help="file format of the figures (default: png)")
    plot.add_argument("--dpi", type=_dpi, default=DEFAULT_DPI,
                      help=f"resolution of PNGs in dots per inch (default: {DEFAULT_DPI})")
    plot.add_argument("--no-notes", dest="notes", action="store_false",
                      help="write no NOTES.md (and remove one an earlier om-eval plot wrote there)")
    plot.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE, metavar="PROFILE",
                      help=f"price profile of the turn-cost figures: {', '.join(PROFILES)} (default: "
                           f"{DEFAULT_PROFILE})")
    plot.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    plot.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")


def run(args: argparse.Namespace) -> int:
    from om_eval.cli.report import load_runs, stage_calls
    from om_eval.report import summary_table
    from om_eval.report.plots import run_turn_tables, write_figures

    runs, items = load_runs(args.results, args.runs)
    if not runs:
        print(f"no runs in {args.results}/store; start one with: om-eval run experiment=smoke")
        return 1
    out = Path(args.out or Path(args.results) / "plots")
    table = summary_table(runs, items, calls=stage_calls(args.results, runs), n_boot=args.n_boot, seed=args.seed)
    turns = run_turn_tables(runs, items)
    for path in write_figures(table, out, fmt=args.format, dpi=args.dpi, notes=args.notes, turns=turns,
                              profile=args.profile):
        print(path)
    if not any(len(t) for tables in turns.values() for t in tables):
        print("turn-cost figures skipped: no run here recorded turn tables (runs made with run.turn_costs=false, "
              "or stored before turn tables were recorded, have none)")
    return 0
