"""``om-eval runs``: list the runs of a results folder, remove the ones not worth keeping."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

RUNS_EXAMPLES = """examples:
  om-eval runs list                         # every run: id, label, questions done and failed, dataset
  om-eval runs rm 1825af23                  # delete a run (id prefix or label) and every file kept for it
  om-eval runs rm 1825af23 e76636ce --yes   # several, without asking
A run's files: its store file, DuckDB's and the writer's files beside it (WAL, lock, call journal), its official
exports (results/runs/<id>/) and its archives (results/exports/<id>*); each is listed as it is removed.
Cached model calls are shared between runs and stay (a run of the same configuration is served from them free);
so do archives written elsewhere with export --out.
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    runs = commands.add_parser("runs", help="list or remove stored runs", epilog=RUNS_EXAMPLES,
                               description="List the runs of a results folder, or remove some.",
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = runs.add_subparsers(dest="runs_command", metavar="VERB", required=True)
    listing = verbs.add_parser("list", help="one line per run")
    listing.add_argument("--results", default="results", help="results folder (default: results)")
    remove = verbs.add_parser("rm", help="delete runs (store file and its sidecars, call journal, exports, archives)")
    remove.add_argument("runs", nargs="+", metavar="RUN", help="run id, id prefix or label")
    remove.add_argument("--results", default="results", help="results folder (default: results)")
    remove.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def run(args: argparse.Namespace) -> int:
    from om_eval.report.detail import find_run
    from om_eval.store import Catalog

    with Catalog(args.results, warn=False) as catalog:
        runs = catalog.runs()
        counts = {r["run_id"]: r for r in catalog.query(
            "SELECT run_id, count(*) FILTER (WHERE status = 'done') AS done, "
            "count(*) FILTER (WHERE status = 'error') AS errors FROM items GROUP BY run_id")}
        busy = [path.stem for path in catalog.skipped_files]
    if args.runs_command == "list":
        for run in runs:
            tally = counts.get(run["run_id"], {})
            print(f"{run['run_id'][:16]}  {tally.get('done', 0):>5} done {tally.get('errors', 0):>4} errors  "
                  f"{run.get('dataset_name') or '?'}  {run.get('label') or ''}")
        for run_id in busy:
            print(f"{run_id[:16]}  (being written, or unreadable)")
        if not runs and not busy:
            print(f"no runs in {Path(args.results) / 'store'}")
        return 0
    try:
        chosen = [_choose(find_run, runs, busy, wanted) for wanted in args.runs]
    except LookupError as error:
        print(f"om-eval runs rm: {error}", file=sys.stderr)
        return 2
    if not args.yes:
        if not sys.stdin.isatty():
            print("om-eval runs rm: pass --yes to remove without a terminal to confirm on", file=sys.stderr)
            return 2
        answer = input(f"remove {len(chosen)} run(s) {', '.join(r[:12] for r in chosen)}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            return 1
    return _remove(args.results, chosen)


def _choose(find_run, runs: list[dict], busy: list[str], wanted: str) -> str:
    unreadable = [run_id for run_id in busy if run_id.startswith(wanted)]
    if len(unreadable) == 1 and not any(r["run_id"].startswith(wanted) for r in runs):
        return unreadable[0]
    return find_run(runs, wanted)["run_id"]


def _remove(results: str, run_ids: list[str]) -> int:
    from om_eval.common.disk import disk_problem
    from om_eval.store import StoreError
    from om_eval.store.removal import remove_run

    failed = 0
    for run_id in dict.fromkeys(run_ids):
        try:
            removed = remove_run(results, run_id)
        except (StoreError, OSError) as error:
            problem = disk_problem(error)
            reason = problem.describe() if problem else error
            print(f"om-eval runs rm: run {run_id[:16]}: {reason}", file=sys.stderr)
            failed += 1
            continue
        print(f"removed run {run_id[:16]}:")
        for path in removed.paths:
            print(f"  {path}")
        if removed.kept:
            print("  kept, written elsewhere with export --out (delete them by hand if they should go too):")
            for path in removed.kept:
                print(f"    {path}")
    return 1 if failed else 0
