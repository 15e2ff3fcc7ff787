"""``om-eval view``: one self-contained HTML page to browse the stored runs."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

VIEW_EXAMPLES = """examples:
  om-eval view                              # results/report.html: runs, per-category bars, every question
  om-eval view --results /tmp/sweep --out sweep.html --runs 1825af23 e76636ce
"""

def add_parser(commands: argparse._SubParsersAction) -> None:
    view = commands.add_parser("view", help="write a static HTML report (runs, categories, per-question drill-down)",
                               description="Write one self-contained HTML file to browse the stored runs.",
                               epilog=VIEW_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    view.add_argument("--results", default="results", help="results folder (default: results)")
    view.add_argument("--runs", nargs="+", metavar="ID", help="only these runs (run id or a prefix of it)")
    view.add_argument("--out", help="output file (default: <results>/report.html)")
    view.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    view.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")


def run(args: argparse.Namespace) -> int:
    from om_eval.report.view import write_view

    out = Path(args.out or Path(args.results) / "report.html")
    # Written beside the page, then put in its place: a full disk leaves the previous page whole, not half a new one.
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    try:
        write_view(args.results, partial, run_prefixes=args.runs, n_boot=args.n_boot, seed=args.seed)
        os.replace(partial, out)
    except LookupError as error:
        print(f"om-eval view: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        if error.filename == str(partial):
            error.filename = str(out)  # the page the user asked for, not its temporary name
        raise
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
    print(out)
    return 0
