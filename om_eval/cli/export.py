"""``om-eval export``: one archive with a run's answers, verdicts, configuration, hashes, cost and latency."""

from __future__ import annotations

import argparse
import sys

EXPORT_EXAMPLES = """examples:
  om-eval export 1825af23                         # results/exports/<run id>.zip
  om-eval export smoke --out smoke.zip
  om-eval export smoke --partial                  # a run not finished: results/exports/<run id>-partial.zip
A run with questions pending (still running, or stopped) or failed is refused unless --partial is given.
Verify and re-score an archive:
  python -c "from om_eval.report.export import rescore_archive; print(rescore_archive('smoke.zip'))"
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    export = commands.add_parser("export", help="write one archive someone else can re-score a run from",
                                 description="Write a run's answers, every judge's verdicts and replies, the "
                                 "resolved config, hashes of data, prompts, judge templates and of every file, "
                                 "cost, latency, metrics and comparability verdict into one zip archive.",
                                 epilog=EXPORT_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_argument("run", help="run id, id prefix, label or experiment (when it names one run)")
    export.add_argument("--results", default="results", help="results folder (default: results)")
    export.add_argument("--out", help="archive path (default: <results>/exports/<run id>.zip)")
    export.add_argument("--partial", action="store_true",
                        help="export a run that is not finished (questions pending or failed) as a partial archive: "
                        "its state goes into the archive, and -partial into its file name")


def run(args: argparse.Namespace) -> int:
    from om_eval.report.export import UnfinishedRunError, archive_state, export_run

    try:
        path = export_run(args.results, args.run, args.out, partial=args.partial)
    except LookupError as error:
        print(f"om-eval export: {error}", file=sys.stderr)
        return 2
    except UnfinishedRunError as error:
        print(f"om-eval export: {error}", file=sys.stderr)
        return 1
    state = archive_state(path)
    if state["state"] != "finished":
        print(f"partial archive written to {path} ({state['state']}: {state['done']} of {state['questions']} "
              f"questions done, {state['pending']} pending, {state['error']} error)")
    else:
        print(f"archive written to {path}")
    return 0
