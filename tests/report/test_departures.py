"""The report names how a Mastra-like run departs from Mastra's own harness; the strict preset departs least."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from om_eval.experiment.spec import spec_from_config
from om_eval.report.departures import ALWAYS, departure_notes, mastra_departures
from tests.runs import compose_run


def resolved(tmp_path: Path, experiment: str, *overrides: str) -> dict:
    cfg = compose_run(tmp_path, *overrides, experiment=experiment)
    return dict(spec_from_config(OmegaConf.to_container(cfg, resolve=True)).resolved)


def test_the_published_setup_names_what_om_eval_changed(tmp_path: Path) -> None:
    found = mastra_departures(resolved(tmp_path, "mastra_gpt4o"))
    text = " | ".join(found)
    for expected in ("data s (Mastra: the original longmemeval_s)", "judge model openai/gpt-4o-2024-08-06",
                     "capped at 10 tokens", "yes anywhere", "without a verdict is unjudged"):
        assert expected in text, expected
    assert "pending tokens" not in text  # benchmark_era counts as the dev code did
    assert "prompts are om-eval's paraphrase, not Mastra's text (Mastra: @mastra/memory 1.3.0's own" in text


def test_mastras_prompts_are_the_published_releases(tmp_path: Path) -> None:
    exact = mastra_departures(resolved(tmp_path, "mastra_gpt4o", "prompt=mastra_exact"))
    assert exact[-3:] == ["thread sections merged by om-eval's rule (Mastra: om.thread_sections=mastra)", *ALWAYS]
    assert not any("prompts" in line for line in exact)
    newer = mastra_departures(resolved(tmp_path, "mastra_gpt4o_strict", "om.observation.request_layout=split",
                                       "om.context_layout=chunked", "prompt.mastra_version=1.10.0"))
    assert newer[0] == "@mastra/memory 1.10.0's prompts (Mastra: 1.3.0's)"
    found = mastra_departures(resolved(tmp_path, "mastra_v1_31_strict", "prompt=current"))
    assert found == ["prompts are om-eval's paraphrase, not Mastra's text (Mastra: @mastra/memory 1.31.0's own; "
                     "prompt=mastra_exact)", *ALWAYS]
    reader = resolved(tmp_path, "mastra_gpt4o_strict", "baseline=full_context")
    assert not any("prompt" in line for line in mastra_departures(reader))  # a reader reads no OM prompts


def test_the_strict_preset_keeps_only_what_om_eval_cannot_reproduce(tmp_path: Path) -> None:
    assert mastra_departures(resolved(tmp_path, "mastra_gpt4o_strict")) == list(ALWAYS)
    assert mastra_departures(resolved(tmp_path, "mastra_v1_31_strict")) == list(ALWAYS)
    dev = mastra_departures(resolved(tmp_path, "mastra_v1_31_strict", "om.replay.pending_accounting=mastra_dev"))
    assert dev[0] == "pending tokens counted as mastra_dev (the 1.31 package: mastra_step)"
    loose = mastra_departures(resolved(tmp_path, "mastra_gpt4o_strict", "om.replay.pending_accounting=exact"))
    assert loose[0].startswith("pending tokens counted as exact")


def test_only_mastra_experiments_get_a_note(tmp_path: Path) -> None:
    runs = [{"run_id": "a" * 16, "label": "smoke", "config_json": resolved(tmp_path, "smoke")},
            {"run_id": "b" * 16, "label": "strict", "config_json": resolved(tmp_path, "mastra_gpt4o_strict")}]
    (note,) = departure_notes(runs)
    assert note.startswith("Departures from Mastra's harness (strict): no re-asks")


def test_robustness_rules_are_a_departure_unless_turned_off(tmp_path: Path) -> None:
    found = mastra_departures(resolved(tmp_path, "mastra_gpt4o_strict", "om.reply_checks=om_eval"))
    assert found[0].startswith("om-eval's observer/reflector robustness rules")
    assert found[1:] == list(ALWAYS)
    found = mastra_departures(resolved(tmp_path, "mastra_gpt4o_strict", "om.thread_sections=om_eval"))
    assert found[0].startswith("thread sections merged by om-eval's rule")
    assert found[1:] == list(ALWAYS)
