#!/usr/bin/env bash
# Differential tests of om-eval's OM against Mastra's @mastra/memory 1.10.0, run by Node: the text helpers
# (tests/om/test_mastra_differential.py), the engine replayed pair by pair (tests/om/test_mastra_engine_differential.py)
# and, under prompt=mastra_exact, every request compared whole with the package's (test_mastra_exact_differential.py).
#
#   scripts/mastra_differential.sh            # installs the packages once per $OM_EVAL_CACHE_DIR (else per run)
#   OM_EVAL_CACHE_DIR=~/.cache/om-eval scripts/mastra_differential.sh -k engine -x
#
# Needs node and npm with registry access (the tests skip and say why otherwise). Prints the cases compared per
# reference function and, per engine cell (scope x buffering), how often each mechanism ran and how many pairs
# agree on each field, and the time taken. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True

python="${PYTHON:-.venv/bin/python}"
[ -x "$python" ] || python=python3

start=$(date +%s)
"$python" -m pytest -m mastra -rA -q tests/om/test_mastra_differential.py tests/om/test_mastra_engine_differential.py \
  tests/om/test_mastra_exact_differential.py "$@"
status=$?
echo "mastra differential: $(( $(date +%s) - start )) s, pytest exit code ${status}"
exit "$status"
