"""``om-eval show``, ``om-eval view`` and ``om-eval rejudge``: drill down into one question, browse runs, re-grade."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SHOW_EXAMPLES = """examples:
  om-eval show 1825af23 fx0a1b2c            # one question of one run (run id prefix or label, question id prefix)
  om-eval show smoke fx0a1b2c --full        # every line of the observations and of what the actor saw
  om-eval show 1825af23 fx0a1b2c --json     # the same as JSON
"""
VIEW_EXAMPLES = """examples:
  om-eval view                              # results/report.html: runs, per-category bars, every question
  om-eval view --results /tmp/sweep --out sweep.html --runs 1825af23 e76636ce
"""
REJUDGE_EXAMPLES = """examples:
  om-eval rejudge 1825af23 judge=house model@models.judge=local          # a second judge on the same answers
  om-eval rejudge 1825af23 judge=official                               # the upstream templates
  om-eval rejudge smoke judge.parse=mastra
Verdicts go to the run's judgments table; om-eval report shows how far the judges agree (Cohen's kappa).
"""


def add_drill_parsers(commands: argparse._SubParsersAction) -> None:
    show = commands.add_parser("show", help="one question of one run: evidence, memory, actor prompt, verdicts",
                               description="Everything stored about one question of one run.", epilog=SHOW_EXAMPLES,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("run", help="run id, id prefix or label")
    show.add_argument("question", help="question id or a prefix of it")
    show.add_argument("--results", default="results", help="results folder (default: results)")
    show.add_argument("--full", action="store_true", help="do not shorten long observations and prompts")
    show.add_argument("--json", action="store_true", help="print the detail as JSON")

    view = commands.add_parser("view", help="write a static HTML report (runs, categories, per-question drill-down)",
                               description="Write one self-contained HTML file to browse the stored runs.",
                               epilog=VIEW_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    view.add_argument("--results", default="results", help="results folder (default: results)")
    view.add_argument("--runs", nargs="+", metavar="ID", help="only these runs (run id or a prefix of it)")
    view.add_argument("--out", help="output file (default: <results>/report.html)")
    view.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    view.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")

    rejudge = commands.add_parser("rejudge", help="grade a run's stored answers with another judge (no replay)",
                                  description="Grade every stored answer of a run again with the judge the "
                                  "overrides name; the answers and the memory are not touched.",
                                  epilog=REJUDGE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    rejudge.add_argument("run", help="run id, id prefix or label")
    rejudge.add_argument("overrides", nargs="*", help="judge overrides in Hydra syntax (judge=…, model@models.judge=…)")
    rejudge.add_argument("--results", default="results", help="results folder (default: results)")
    rejudge.add_argument("--concurrency", type=int, default=4, help="judge calls at a time (default 4)")
    rejudge.add_argument("--cache-dir", help="response cache folder (default: the run's)")


def run_show(args: argparse.Namespace) -> int:
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


def run_view(args: argparse.Namespace) -> int:
    from om_eval.report.view import write_view

    out = Path(args.out or Path(args.results) / "report.html")
    try:
        path = write_view(args.results, out, run_prefixes=args.runs, n_boot=args.n_boot, seed=args.seed)
    except LookupError as error:
        print(f"om-eval view: {error}", file=sys.stderr)
        return 2
    print(path)
    return 0


def run_rejudge(args: argparse.Namespace) -> int:
    from om_eval.bench.judge import OfficialTemplateError
    from om_eval.experiment.rejudge import RejudgeError, rejudge_run
    from om_eval.om.config import ConfigError
    from om_eval.report.agreement import agreement_lines
    from om_eval.store import StoreError

    if args.concurrency < 1:
        print(f"om-eval rejudge: --concurrency {args.concurrency} is invalid: must be >= 1", file=sys.stderr)
        return 2
    try:
        result = rejudge_run(args.results, args.run, args.overrides, concurrency=args.concurrency,
                             cache_dir=args.cache_dir)
    except (RejudgeError, StoreError, OfficialTemplateError, ConfigError) as error:
        print(f"om-eval rejudge: {error}", file=sys.stderr)
        return 2
    judge = f"{result.judge_identity['mode']}:{result.judge_identity['model']}"
    print(f"run {result.run_id[:12]}: {result.judged} answers graded by {judge}, {result.errors} judge errors, "
          f"{result.skipped} questions without an answer")
    for line in agreement_lines(result.agreement):
        print(line)
    return 1 if result.errors else 0
