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


def test_extraction_schema_at_its_default_keeps_earlier_runs_ids_and_set_moves_them(tmp_path) -> None:
    import copy

    from omegaconf import OmegaConf

    from om_eval.experiment.spec import spec_from_config
    from om_eval.memory.identity import seam_memory_key
    from tests.runs import compose_run

    def ids(config: dict) -> tuple[str, str]:
        spec = spec_from_config(config)
        return spec.config_hash, seam_memory_key(spec, make_system(spec.memory_system, spec.memory_options), "t")

    now = OmegaConf.to_container(compose_run(tmp_path, "memory=mem0"), resolve=True)
    before = copy.deepcopy(now)
    del before["memory"]["extraction_schema"]  # a config from before the option existed
    on = OmegaConf.to_container(compose_run(tmp_path, "memory=mem0", "memory.extraction_schema=true"), resolve=True)
    assert ids(now) == ids(before)
    assert all(a != b for a, b in zip(ids(on), ids(now), strict=True))
