"""``om-eval show``: everything stored about one question of one run."""

from __future__ import annotations

import argparse
import sys

SHOW_EXAMPLES = """examples:
  om-eval show 1825af23 fx0a1b2c            # one question of one run (run id prefix, question id prefix)
  om-eval show smoke fx0a1b2c               # the run labelled smoke, else the one run of experiment=smoke
  om-eval show smoke fx0a1b2c --full        # every line of the observations and of what the actor saw
  om-eval show 1825af23 fx0a1b2c --json     # the same as JSON
"""

def add_parser(commands: argparse._SubParsersAction) -> None:
    show = commands.add_parser("show", help="one question of one run: evidence, memory, actor prompt, verdicts",
                               description="Everything stored about one question of one run.", epilog=SHOW_EXAMPLES,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("run", help="run id, id prefix, label or experiment (when it names one run)")
    show.add_argument("question", help="question id or a prefix of it")
    show.add_argument("--results", default="results", help="results folder (default: results)")
    show.add_argument("--full", action="store_true", help="do not shorten long observations and prompts")
    show.add_argument("--json", action="store_true", help="print the detail as JSON")


def run(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console

    from om_eval.report.detail import find_question, find_run, question_detail
    from om_eval.report.show import render_detail
    from om_eval.store import Catalog

    with Catalog(args.results, warn=False) as catalog:
        try:
            run = find_run(catalog.runs(), args.run)
            ids = [r["question_id"] for r in catalog.query("SELECT question_id FROM items WHERE run_id = ?",
                                                            [run["run_id"]])]
            detail = question_detail(catalog, run["run_id"], find_question(ids, args.question))
        except LookupError as error:
            print(f"om-eval show: {error}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(detail, indent=1, default=str, ensure_ascii=False))
    else:
        from om_eval.common.text import printable_data

        render_detail(printable_data(detail), Console(), full=args.full)
    return 0
