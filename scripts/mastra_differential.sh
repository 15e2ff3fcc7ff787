#!/usr/bin/env bash
# Differential test of om-eval's OM text helpers against Mastra's @mastra/memory 1.10.0, run by Node.
#
#   scripts/mastra_differential.sh            # installs the package once per $OM_EVAL_CACHE_DIR (else per run)
#   OM_EVAL_CACHE_DIR=~/.cache/om-eval scripts/mastra_differential.sh -x
#
# Needs node and npm with registry access (the tests skip and say why otherwise). Prints the cases compared per
# reference function, how many were identical, and the time taken. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True

python="${PYTHON:-.venv/bin/python}"
[ -x "$python" ] || python=python3

start=$(date +%s)
"$python" -m pytest -m mastra -rA -q tests/om/test_mastra_differential.py "$@"
status=$?
echo "mastra differential: $(( $(date +%s) - start )) s, pytest exit code ${status}"
exit "$status"
