"""Case 1: transient provider failures (429, 5xx, 408) of any role are retried by the client; the run ends clean.

Each case points one role at a scripted model whose first two calls of that role fail, then compares the run
with a clean reference run of the same configuration.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from om_eval.llm.providers import register_scripted
from om_eval.testing.scripted.model import ScriptedModel
from tests.reliability.harness import (
    REFLECTING,
    Outcome,
    assert_calls_accounted,
    assert_consistent,
    assert_matches,
    invoke,
    outcome,
    query,
)

TRANSIENT = ("rate_limit", "server_error", "timeout")
ROLES = ("observer", "reflector", "actor", "judge")


@pytest.mark.parametrize("fault", TRANSIENT)
@pytest.mark.parametrize("role", ROLES)
def test_a_transient_fault_is_retried_and_the_run_ends_clean(
    tmp_path: Path, reference: Callable[..., Outcome], role: str, fault: str
) -> None:
    name = f"transient-{role}-{fault}"
    model = ScriptedModel(faults={role: [fault, fault]}, history=None)
    register_scripted(name, model)
    # The smoke thresholds never reach a reflection; the reflector is only asked with smaller ones.
    extra = REFLECTING if role == "reflector" else ()
    done = invoke(tmp_path, f"models.{role}.model=scripted/{name}", *extra)

    assert done.code == 0 and "0 errors" in done.flat, done.output[-2000:]
    assert "failed" not in done.flat and "not what the configuration asks for" not in done.flat
    assert_consistent(tmp_path)
    assert_matches(outcome(tmp_path), reference(*extra))
    retried = query(tmp_path, "SELECT sum(retries) AS n, count(error) AS errors FROM llm_calls WHERE stage = ?", [role])
    assert retried[0]["n"] == 2 and retried[0]["errors"] == 0  # the two failures were retries, not errors
    assert_calls_accounted(tmp_path, name, [model])
