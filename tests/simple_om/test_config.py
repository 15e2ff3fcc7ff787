"""Settings validation: every error names the argument and what to pass."""

from __future__ import annotations

from typing import Any

import pytest

from om_eval.simple_om import SimpleObservationalMemory, SimpleOMConfig


def test_defaults_are_the_documented_ones() -> None:
    config = SimpleObservationalMemory().config
    assert config == SimpleOMConfig(buffer_threshold=2000, max_observations=50, scope="resource",
                                    budget=(500, 2500), timeout_s=60.0)


@pytest.mark.parametrize(("options", "pattern"), [
    ({"buffer_threshold": 0}, r"buffer_threshold=0 is invalid: pass an integer >= 1"),
    ({"buffer_threshold": 2.5}, r"buffer_threshold=2.5 is invalid"),
    ({"buffer_threshold": True}, r"buffer_threshold=True is invalid"),
    ({"max_observations": 0}, r"max_observations=0 is invalid: pass an integer >= 1"),
    ({"max_observations": "50"}, r"max_observations='50' is invalid"),
    ({"scope": "user"}, r"scope='user' is invalid: pass 'resource' .* or 'thread'"),
    ({"budget": (2500, 500)}, r"budget=\(2500, 500\) is invalid: pass a \(min, max\) pair .*0 <= min <= max"),
    ({"budget": (-1, 5)}, r"budget=\(-1, 5\) is invalid"),
    ({"budget": (500,)}, r"budget=\(500,\) is invalid"),
    ({"budget": 2500}, r"budget=2500 is invalid"),
    ({"budget": (0.5, 10)}, r"budget=\(0.5, 10\) is invalid"),
    ({"timeout_s": 0}, r"timeout_s=0 is invalid: pass a finite number of seconds > 0"),
    ({"timeout_s": float("inf")}, r"timeout_s=inf is invalid"),
    ({"observer": "llm"}, r"observer='llm' is invalid: pass a function"),
    ({"count_tokens": 4}, r"count_tokens=4 is invalid: pass a function"),
])
def test_bad_settings_are_named(options: dict[str, Any], pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        SimpleObservationalMemory(**options)


def test_a_budget_list_becomes_a_tuple_and_zero_max_is_allowed() -> None:
    assert SimpleOMConfig(budget=[0, 0]).budget == (0, 0)  # type: ignore[arg-type]


def test_config_round_trips_through_a_dict() -> None:
    config = SimpleOMConfig(buffer_threshold=7, max_observations=3, scope="thread", budget=(1, 9), timeout_s=2.5)
    assert SimpleOMConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match=r"unknown keys \['threshold'\]"):
        SimpleOMConfig.from_dict({"threshold": 3})
