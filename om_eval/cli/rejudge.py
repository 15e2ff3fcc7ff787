"""``om-eval rejudge``: grade a run's stored answers with another judge, without replaying anything."""

from __future__ import annotations

import argparse
import sys

REJUDGE_EXAMPLES = """examples:
  om-eval rejudge 1825af23 judge=house model@models.judge=local          # a second judge on the same answers
  om-eval rejudge 1825af23 judge=official                               # the upstream templates
  om-eval rejudge smoke judge.parse=mastra
Verdicts go to the run's judgments table; om-eval report shows how far the judges agree (Cohen's kappa).
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    rejudge = commands.add_parser("rejudge", help="grade a run's stored answers with another judge (no replay)",
                                  description="Grade every stored answer of a run again with the judge the "
                                  "overrides name; the answers and the memory are not touched.",
                                  epilog=REJUDGE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    rejudge.add_argument("run", help="run id, id prefix or label")
    rejudge.add_argument("overrides", nargs="*", help="judge overrides in Hydra syntax (judge=…, model@models.judge=…)")
    rejudge.add_argument("--results", default="results", help="results folder (default: results)")
    rejudge.add_argument("--concurrency", type=int, default=4, help="judge calls at a time (default 4)")
    rejudge.add_argument("--cache-dir", help="response cache folder (default: the run's)")


def run(args: argparse.Namespace) -> int:
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
