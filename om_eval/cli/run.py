"""``om-eval run``: LongMemEval through OM with a Hydra config; everything after ``run`` goes to Hydra."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

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



def add_parser(commands: argparse._SubParsersAction) -> None:
    """Only for ``--help``: the arguments are Hydra's, parsed by :func:`run_hydra`."""
    commands.add_parser("run", help="run LongMemEval through OM (Hydra overrides; -m for sweeps)",
                        description=RUN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)


def run_hydra(overrides: Sequence[str]) -> int:
    from om_eval.experiment.app import main as run_main

    return run_main(list(overrides))
