"""``prompt=mastra_exact`` in the run config, offline: which release, refused mismatches, identity and provenance.

No pack is loaded here (a run id needs only the pins); running with a pack is in ``test_mastra_exact_run.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from om_eval.experiment.job import RunJob
from om_eval.experiment.spec import RunSpec, spec_from_config
from om_eval.om.config import ConfigError
from om_eval.om.exact import RELEASES
from om_eval.om.prompts import prompt_set_hash
from tests.runs import compose_run


def spec(tmp_path: Path, *overrides: str, experiment: str = "smoke") -> RunSpec:
    return spec_from_config(OmegaConf.to_container(compose_run(tmp_path, *overrides, experiment=experiment),
                                                   resolve=True))


@pytest.mark.parametrize(("engine", "version"), [((), "1.10.0"), (("om=benchmark_era",), "1.3.0"),
                                                  (("om=v1_31",), "1.31.0")])
def test_the_release_is_the_one_the_engine_follows(tmp_path: Path, engine: tuple[str, ...], version: str) -> None:
    derived = spec(tmp_path, "prompt=mastra_exact", *engine)
    assert derived.om.prompt_variant == "mastra_exact" and derived.mastra_prompts is not None
    assert derived.mastra_prompts.version == version and derived.resolved["prompt"]["mastra_version"] == version
    named = spec(tmp_path, "prompt=mastra_exact", f"prompt.mastra_version={version}", *engine)
    assert named.config_hash == derived.config_hash  # naming the release the engine follows is the same run
    assert derived.config_hash != spec(tmp_path, *engine).config_hash


def test_a_release_that_does_not_fit_the_engine_is_refused_naming_both(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        spec(tmp_path, "prompt=mastra_exact", "prompt.mastra_version=1.3.0")
    message = str(refused.value)
    for named in ("prompt.mastra_version=1.3.0 does not fit the engine", "om.observation.request_layout='split'",
                  "om.context_layout='chunked'", "use prompt.mastra_version=1.10.0", "om=benchmark_era is 1.3.0's"):
        assert named in message, named
    with pytest.raises(ConfigError, match=r"om\.mastra_release='v1_10' \(it needs 'v1_31'"):
        spec(tmp_path, "prompt=mastra_exact", "prompt.mastra_version=1.31.0")


def test_unknown_releases_and_variants_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"prompt\.mastra_version=1\.9\.0 is not pinned.*1\.3\.0, 1\.10\.0, 1\.31\.0"):
        spec(tmp_path, "prompt=mastra_exact", "prompt.mastra_version=1.9.0")
    with pytest.raises(ConfigError, match=r"prompt\.mastra_variant=legacy is not a prompt variant of "
                                          r"@mastra/memory 1\.10\.0 \(it has current\)"):
        spec(tmp_path, "prompt=mastra_exact", "prompt.mastra_variant=legacy")
    legacy = spec(tmp_path, "prompt=mastra_exact", "prompt.mastra_variant=legacy", experiment="mastra_gpt4o")
    assert legacy.mastra_prompts is not None and legacy.mastra_prompts.identity.startswith("mastra@1.3.0/legacy#")
    assert legacy.config_hash != spec(tmp_path, "prompt=mastra_exact", experiment="mastra_gpt4o").config_hash


def test_om_evals_words_take_none_of_its_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"prompt\.mastra_version=1\.3\.0 only applies to prompt=mastra_exact"):
        spec(tmp_path, "prompt.mastra_version=1.3.0", experiment="mastra_gpt4o")
    assert spec(tmp_path).mastra_prompts is None


def test_where_the_package_comes_from_is_not_part_of_the_run(tmp_path: Path) -> None:
    plain = spec(tmp_path, "prompt=mastra_exact")
    local = spec(tmp_path, "prompt=mastra_exact", f"prompt.source={tmp_path / 'memory-1.10.0.tgz'}")
    assert local.mastra_prompts is not None and local.mastra_prompts.source is not None
    assert local.config_hash == plain.config_hash


def test_the_strict_presets_read_mastras_own_prompts(tmp_path: Path) -> None:
    strict = spec(tmp_path, experiment="mastra_gpt4o_strict")
    assert strict.mastra_prompts is not None and strict.mastra_prompts.version == "1.3.0"
    assert strict.mastra_prompts.variant == "current" and strict.om.prompt_variant == "mastra_exact"
    newer = spec(tmp_path, experiment="mastra_v1_31_strict")
    assert newer.mastra_prompts is not None and newer.mastra_prompts.version == "1.31.0"
    published = spec(tmp_path, experiment="mastra_gpt4o")
    assert published.mastra_prompts is None and published.om.prompt_variant == "current_v1_3"  # the paraphrase
    # Switching back to om-eval's words is one override.
    assert spec(tmp_path, "prompt=current_v1_3", experiment="mastra_gpt4o_strict").mastra_prompts is None


def test_the_run_records_the_package_or_om_evals_prompt_hash(tmp_path: Path) -> None:
    strict = RunJob(spec(tmp_path, experiment="mastra_gpt4o_strict"))
    provenance = strict._prompt_hashes()
    assert provenance == {"om": strict.spec.mastra_prompts.identity, "package": "@mastra/memory",  # type: ignore[union-attr]
                          "version": "1.3.0", "variant": "current", "integrity": RELEASES["1.3.0"].integrity}
    # om-eval's words: the record every earlier run stored, unchanged (so they resume); no package named.
    assert RunJob(spec(tmp_path))._prompt_hashes() == {"om": prompt_set_hash(), "variant": "current"}
    assert json.dumps(provenance)  # stored as JSON
    # The memory key holds the pack's identity where om-eval's prompt hash stands.
    assert strict.memory_key != RunJob(spec(tmp_path, "prompt=current_v1_3",
                                            experiment="mastra_gpt4o_strict")).memory_key
