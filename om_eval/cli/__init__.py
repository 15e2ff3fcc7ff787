"""The ``om-eval`` command line: one module per command, each with ``add_parser(commands)`` and ``run(args)``.

Heavy imports stay inside the commands' ``run`` so that ``--help`` is instant. The ``run`` command is the exception:
everything after it goes to Hydra before any parsing (:func:`om_eval.cli.run.run_hydra`), so its module only
describes it for ``--help``.

A full disk, a read-only folder or a refused permission ends any command with one line naming the path and what to
do, and exit status 1 (:mod:`om_eval.common.disk`); ``run`` says it from its Hydra job, where Hydra would print a
traceback first.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: The commands, in the order ``--help`` lists them; each is the module ``om_eval.cli.<name>``.
COMMANDS = ("run", "demo", "report", "plot", "show", "view", "rejudge", "export", "runs", "cache", "data")
#: How a command writes somewhere else, for the one line a full disk or a read-only folder ends it with.
ELSEWHERE = {"view": "choose another --out", "export": "choose another --out", "plot": "choose another --out",
             "data": "choose another --out", "demo": "choose another --cache-dir", "cache": "choose another --dir"}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"] and not ({"-h", "--help"} & set(argv[1:2])):
        from om_eval.cli.run import run_hydra

        return run_hydra(argv[1:])
    parser = argparse.ArgumentParser(
        prog="om-eval",
        description="Reproduce, sweep and explain Observational Memory scores on LongMemEval.",
    )
    from om_eval.common.version import __version__

    parser.add_argument("--version", action="version", version=f"om-eval {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = {name: importlib.import_module(f"om_eval.cli.{name}") for name in COMMANDS}
    for module in modules.values():
        module.add_parser(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return modules[args.command].run(args)
    except Exception as error:
        from om_eval.common.disk import disk_problem

        problem = disk_problem(error)
        if problem is None:
            raise
        print(f"om-eval {args.command}: {problem.describe(ELSEWHERE.get(args.command))}", file=sys.stderr)
        return 1
