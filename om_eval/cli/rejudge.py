"""``om-eval rejudge``: grade a run's stored answers with another judge, without replaying anything."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from om_eval.experiment.rejudge import RejudgeResult

REJUDGE_EXAMPLES = """examples:
  om-eval rejudge 1825af23 judge=house model@models.judge=local          # a second judge on the same answers
  om-eval rejudge 1825af23 judge=official                               # the upstream templates
  om-eval rejudge smoke judge.parse=mastra
  om-eval rejudge smoke judge=panel --probes                            # every protocol, plus the judge probes
  om-eval rejudge smoke judge=panel "judge.panel=[house,house_strict,lenient,house:local]"
Verdicts go to the run's judgments table (probe verdicts to probe_verdicts); om-eval report shows how far the
judges agree (Cohen's kappa), the judge panel (score per protocol, range, flipped questions) and, after
--probes, each judge's false-accept and false-reject rates.

exit status: 0 every judge that could run graded every answer (panel protocols skipped by design aside: the
upstream templates offline, a hosted judge model without its key, LoCoMo and the upstream templates); 1 a judge
error (each failing judge's count and first error on stderr), or a protocol skipped for another reason (any skip
with --strict); 2 nothing graded (bad option, no such run, missing credentials, no protocol could run); 130
interrupted. See docs/cli.md.
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    rejudge = commands.add_parser("rejudge", help="grade a run's stored answers with another judge (no replay)",
                                  description="Grade every stored answer of a run again with the judge the "
                                  "overrides name; the answers and the memory are not touched.",
                                  epilog=REJUDGE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    rejudge.add_argument("run", help="run id, id prefix, label or experiment (when it names one run)")
    rejudge.add_argument("overrides", nargs="*", help="judge overrides in Hydra syntax (judge=…, model@models.judge=…)")
    rejudge.add_argument("--results", default="results", help="results folder (default: results)")
    rejudge.add_argument("--concurrency", type=int, default=4, help="judge calls at a time (default 4)")
    rejudge.add_argument("--cache-dir", help="response cache folder (default: the run's)")
    rejudge.add_argument("--config-dir", help="a folder of your own configs (judge models), as om-eval run's")
    rejudge.add_argument("--probes", action="store_true",
                         help="also grade three probe answers per question (the gold, a vague one, a specific "
                         "wrong one) to measure each judge's false accepts and rejects; three times the calls")
    rejudge.add_argument("--strict", action="store_true",
                         help="judge=panel: exit 1 when any protocol is skipped, even by design (offline, no key)")


def run(args: argparse.Namespace) -> int:
    from om_eval.configs import checked_user_dir, using_user_dir

    if args.concurrency < 1:
        print(f"om-eval rejudge: --concurrency {args.concurrency} is invalid: must be >= 1", file=sys.stderr)
        return 2
    try:
        folder = None if args.config_dir is None else checked_user_dir(args.config_dir)
    except ValueError as error:
        print(f"om-eval rejudge: {error}", file=sys.stderr)
        return 2
    with using_user_dir(folder):  # only this command's --config-dir is searched
        return _rejudge(args)


def _rejudge(args: argparse.Namespace) -> int:
    from om_eval.bench.judging.judge import OfficialTemplateError
    from om_eval.experiment.rejudge import RejudgeError, rejudge_panel, rejudge_run
    from om_eval.om.config import ConfigError
    from om_eval.report.agreement import agreement_lines
    from om_eval.store import StoreError

    panel = any(o in ("judge=panel", "judge.mode=panel") for o in args.overrides)
    try:
        if panel:
            outcome = rejudge_panel(args.results, args.run, args.overrides, concurrency=args.concurrency,
                                    cache_dir=args.cache_dir, probes=args.probes)
            results, labels = outcome.judges, outcome.labels
        else:
            result = rejudge_run(args.results, args.run, args.overrides, concurrency=args.concurrency,
                                 cache_dir=args.cache_dir, probes=args.probes)
            results, labels = [result], [f"{result.judge_identity['mode']}:{result.judge_identity['model']}"]
    except (RejudgeError, StoreError, OfficialTemplateError, ConfigError) as error:
        print(f"om-eval rejudge: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("om-eval rejudge: interrupted; the verdicts of every judge that finished are stored, and the same "
              "command again takes the finished calls from the cache", file=sys.stderr)
        return 130
    for result, label in zip(results, labels):
        probes = f", {result.probes} probe answers graded ({result.probe_errors} errors)" if args.probes else ""
        print(f"run {result.run_id[:12]}: {result.judged} answers graded by {label}, {result.errors} judge errors, "
              f"{result.skipped} questions without an answer{probes}")
    skipped = outcome.skipped if panel else {}
    by_reason: dict[str, list[str]] = {}
    for label, skip in skipped.items():
        by_reason.setdefault(skip.reason, []).append(label)
    for reason, skipped_labels in by_reason.items():  # official and mastra share their templates: one hint
        print(f"  not graded: {', '.join(skipped_labels)}: {reason}", file=sys.stderr)
    if panel and not results:
        print("om-eval rejudge: no protocol of judge.panel could grade this run", file=sys.stderr)
        return 2
    for line in agreement_lines(outcome.agreement if panel else results[0].agreement):
        print(line)
    failed_skips = [label for label, skip in skipped.items() if args.strict or not skip.by_design]
    if failed_skips:
        print(f"om-eval rejudge: {', '.join(failed_skips)} not graded"
              f"{' (--strict)' if args.strict else ''}", file=sys.stderr)
    failing = [r for r in results if r.errors or r.probe_errors]
    for result in failing:  # the reason, which otherwise lives only in the store's judgments.error
        print(f"  judge error: {_failure(result)}", file=sys.stderr)
    if failing:
        judges = f"{len(results)} judge{'s' * (len(results) != 1)}"
        print(f"om-eval rejudge: {len(failing)} of {judges} could not grade every answer; those verdicts are stored "
              "as errors, and the same command grades them again", file=sys.stderr)
    return 1 if failing or failed_skips else 0


def _failure(result: RejudgeResult) -> str:
    """One line: the judge, how many answers (and probes) it failed on, and the first error, shortened."""
    from om_eval.report.agreement import clip

    answered = result.judged + result.errors
    counts = [f"{result.errors} of {answered} answers"] if result.errors else []
    if result.probe_errors:
        counts.append(f"{result.probe_errors} of {result.probes + result.probe_errors} probe answers")
    return f"{result.name} failed on {' and '.join(counts)}: {clip(result.first_error or 'no error recorded')}"
