"""The ``om-eval`` command line. Heavy imports stay inside the commands so that ``--help`` is instant."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

DEMO_EXAMPLES = """examples:
  om-eval demo                                  # the local model (needs om-eval[local]), a short conversation
  om-eval demo --model scripted                 # 24 sessions with the offline scripted model, in seconds
  om-eval demo --model scripted --variant legacy --message-tokens 4000 --observation-tokens 3000
  om-eval demo --model openai/gpt-4o-mini --show-context     # any litellm model id (needs its API key)
  om-eval demo --model scripted --scope thread --save-snapshot results/demo-memory.json
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
    demo.add_argument("--model", default="local",
                      help="a config in configs/model (local, scripted, gpt-4o-mini, ...) or a litellm model id")
    demo.add_argument("--sessions", type=int, help="number of sessions (local: 3, otherwise 24)")
    demo.add_argument("--pairs", type=int, help="user/assistant pairs per session (local: 3, otherwise 6)")
    demo.add_argument("--seed", type=int, default=7, help="seed of the synthetic conversation")
    demo.add_argument("--scope", choices=("resource", "thread"), default="resource")
    demo.add_argument("--variant", choices=("current", "current_v1_3", "legacy", "condensed"),
                      help="observer prompt variant (local: condensed, otherwise current)")
    demo.add_argument("--message-tokens", type=int, help="observation threshold (local: 1200, otherwise 6000)")
    demo.add_argument("--observation-tokens", type=int, help="reflection threshold (local: 1500, otherwise 3000)")
    demo.add_argument("--batch-tokens", type=int, help="max tokens per observer batch")
    demo.add_argument("--cache-dir", help="model-answer cache folder (default: om-eval cache path)")
    demo.add_argument("--no-cache", action="store_true", help="call the model even for answers already cached")
    demo.add_argument("--show-context", action="store_true", help="print the actor's full context at the end")
    demo.add_argument("--save-snapshot", metavar="PATH", help="write the memory snapshot as JSON")


RUN_HELP = """Run LongMemEval through OM with a Hydra config; everything after 'run' goes to Hydra.

examples:
  om-eval run experiment=quickstart                    # the bundled mini set with the local model
  om-eval run experiment=smoke                         # the same with the offline scripted model, in seconds
  om-eval run experiment=smoke prompt=legacy om.reflection.start_level=2 om.observation.message_tokens=200
  om-eval run -m experiment=smoke prompt=current,legacy,condensed      # a sweep: one job per variant
  om-eval run -m experiment=smoke prompt=current,legacy hydra/launcher=joblib   # jobs in parallel processes
  om-eval run experiment=mastra_gpt4o dataset.subset.per_type=5 run.budget_usd=20
  om-eval run --cfg job experiment=quickstart          # print the composed config and exit

where results go (run.results_dir, default results/):
  results/store/<run id>.duckdb     every question: answer, verdict, memory, OM events, model calls (DuckDB)
  results/runs/<run id>/            official exports, rewritten at the end of each invocation:
      hypotheses.jsonl                            {"question_id", "hypothesis"} per answered question
      hypotheses.jsonl.eval-results-<judge>       + "autoeval_label" {"model", "label"}, as evaluate_qa.py writes
      metrics.json                                the official metrics (print_qa_metrics.py formulas)
then: om-eval report · om-eval show RUN QUESTION · om-eval view · om-eval rejudge RUN judge=...
"""


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"] and not ({"-h", "--help"} & set(argv[1:2])):
        from om_eval.experiment.app import main as run_main

        return run_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="om-eval",
        description="Reproduce, sweep and explain Observational Memory scores on LongMemEval.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("run", help="run LongMemEval through OM (Hydra overrides; -m for sweeps)",
                        description=RUN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _demo_parser(commands)
    from om_eval.data.cli import add_data_parser
    from om_eval.llm.cache_cli import add_cache_parser
    from om_eval.report.cli import add_report_parsers
    from om_eval.report.drill_cli import add_drill_parsers
    from om_eval.report.runs_cli import add_runs_parser

    add_report_parsers(commands)
    add_drill_parsers(commands)
    add_runs_parser(commands)
    add_cache_parser(commands)
    add_data_parser(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "demo":
        from om_eval.run_demo import run_demo

        return run_demo(args)
    if args.command in ("report", "plot"):
        from om_eval.report.cli import run_plot, run_report

        return run_report(args) if args.command == "report" else run_plot(args)
    if args.command in ("show", "view", "rejudge"):
        from om_eval.report import drill_cli

        return {"show": drill_cli.run_show, "view": drill_cli.run_view, "rejudge": drill_cli.run_rejudge}[
            args.command](args)
    if args.command == "runs":
        from om_eval.report.runs_cli import run_runs_command

        return run_runs_command(args)
    if args.command == "data":
        from om_eval.data.cli import run_data_command

        return run_data_command(args)
    if args.command == "cache":
        from om_eval.llm.cache_cli import run_cache_command

        return run_cache_command(args)
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
