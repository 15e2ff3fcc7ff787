"""``memory=mem0`` without the ``mem0`` extra: the run stops before its first question, naming the extra."""

from __future__ import annotations

import sys

import pytest

from om_eval.memory.registry import available_systems, make_system
from om_eval.om.config import ConfigError


def test_a_missing_extra_is_named_with_its_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "mem0" in available_systems()
    system = make_system("mem0", {"top_k": 5})  # building the system imports nothing of mem0
    assert dict(system.budget()) == {"top_k": 5} and "mem0ai" in system.packages
    monkeypatch.setitem(sys.modules, "mem0", None)  # as if it were not installed
    with pytest.raises(ConfigError, match=r"memory=mem0 needs the mem0 extra .*pip install 'om-eval\[mem0\]'"):
        system.prepare()
