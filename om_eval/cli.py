"""The ``om-eval`` command line. Heavy imports stay inside the commands so that ``--help`` is instant."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

DEMO_EXAMPLES = """examples:
  om-eval demo                                  # 24 sessions through OM, resource scope, scripted model
  om-eval demo --variant legacy --message-tokens 4000 --observation-tokens 3000
  om-eval demo --scope thread --show-context --save-snapshot results/demo-memory.json
"""


def _demo_parser(commands: argparse._SubParsersAction) -> None:
    demo = commands.add_parser(
        "demo",
        help="feed a synthetic multi-session conversation through Observational Memory",
        description="Feed a seeded synthetic conversation through OM with the offline scripted model and show "
        "what the memory did: observations, reflections, token counts and the actor's context.",
        epilog=DEMO_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--sessions", type=int, default=24, help="number of sessions (default 24)")
    demo.add_argument("--pairs", type=int, default=6, help="user/assistant pairs per session (default 6)")
    demo.add_argument("--seed", type=int, default=7, help="seed of the synthetic conversation")
    demo.add_argument("--scope", choices=("resource", "thread"), default="resource")
    demo.add_argument("--variant", choices=("current", "legacy", "condensed"), default="current")
    demo.add_argument("--message-tokens", type=int, default=6000, help="observation threshold (default 6000)")
    demo.add_argument("--observation-tokens", type=int, default=3000, help="reflection threshold (default 3000)")
    demo.add_argument("--batch-tokens", type=int, default=4000, help="max tokens per observer batch")
    demo.add_argument("--show-context", action="store_true", help="print the actor's full context at the end")
    demo.add_argument("--save-snapshot", metavar="PATH", help="write the memory snapshot as JSON")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="om-eval",
        description="Reproduce, sweep and explain Observational Memory scores on LongMemEval.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _demo_parser(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "demo":
        from om_eval.run_demo import run_demo

        return run_demo(args)
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
