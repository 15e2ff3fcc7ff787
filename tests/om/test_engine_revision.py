"""The engine's revision moves with its behaviour.

A fixed conversation (two questions of the bundled mini set, with thresholds low enough to observe, reflect and
buffer) is replayed with the scripted model under each rules profile and scope. What the engine built (its events
and the memory each question ends with) is pinned in ``tests/golden/engine_memory.txt``, and its digest is recorded
against :data:`~om_eval.om.revision.ENGINE_REVISION` in ``tests/golden/engine_revisions.json``. The digest of a
revision never changes: when the engine builds something else, this fails until the revision is bumped (which moves
every memory key, so no earlier memory is reused) and ``CHANGELOG.md`` says why.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

import tests.golden as golden
from om_eval.data.loader import load_dataset
from om_eval.data.synth import mini_fixture_path
from om_eval.experiment.spec import spec_from_config
from om_eval.llm.request import canonical_json
from om_eval.om.revision import ENGINE_REVISION
from om_eval.om.tokens import make_counter
from om_eval.systems.om.replay import replay_question
from om_eval.testing.scripted.model import ScriptedModel
from tests.golden import GOLDEN_DIR, assert_golden
from tests.runs import compose_run

ROOT = Path(__file__).resolve().parents[2]
REVISIONS = GOLDEN_DIR / "engine_revisions.json"

#: Rules profiles and replay shapes; each a list of ``om-eval run`` overrides on the smoke preset.
PROFILES = {
    "om_eval": [],
    "v1_10": ["om.reply_checks=mastra", "om.thread_sections=mastra"],
    "v1_31": ["om=v1_31", "om.reply_checks=mastra"],
    "om_eval buffered": ["om.replay.buffering=true"],
    "v1_10 buffered": ["om.reply_checks=mastra", "om.replay.buffering=true",
                       "om.observation.buffer_candidates=after_cursor"],
    "v1_31 buffered": ["om=v1_31", "om.reply_checks=mastra", "om.replay.buffering=true"],
    "om_eval resource": ["om.replay.scope=resource"],
    "v1_31 resource": ["om=v1_31", "om.reply_checks=mastra", "om.replay.scope=resource"],
    "v1_31 retrieval": ["om=v1_31", "om.retrieval=resource"],
}
LOW_THRESHOLDS = ["om.observation.message_tokens=60", "om.reflection.observation_tokens=150"]


def render_memories(tmp_path: Path) -> str:
    questions = load_dataset(mini_fixture_path()).questions[:2]
    out = [f"# What the engine builds from the golden conversation ({len(questions)} mini questions)", ""]
    for name, overrides in PROFILES.items():
        config = compose_run(tmp_path, *overrides, *LOW_THRESHOLDS)
        spec = spec_from_config(OmegaConf.to_container(config, resolve=True))
        for question in questions:
            memory, _ = asyncio.run(replay_question(question, spec.om, observer=ScriptedModel(), replay=spec.replay,
                                                    token_counter=make_counter(spec.token_estimator)))
            out.append(f"## {name}: {question.question_id}")
            out += [f"- {e.kind} generation={e.generation} tokens={e.message_tokens}/{e.observation_tokens_before}"
                    f"->{e.observation_tokens_after} calls={e.calls}" for e in memory.events]
            snapshot = canonical_json(_without_wall_clock({k: v for k, v in memory.snapshot().items()
                                                           if k != "config"}))
            out.append(f"snapshot sha256: {hashlib.sha256(snapshot.encode()).hexdigest()}")
            out += ["", memory.record().active_observations.strip() or "(no observations)", ""]
    return "\n".join(out)


#: Engine settings added after the golden was recorded, at the value every earlier memory had: a record's copy of the
#: config leaves them out there, so what the engine built is compared, not the list of its settings (a setting that
#: changes what is built moves the rendered events and observations, and the revision with them).
ADDED_SINCE_THE_GOLDEN = {("observation", "buffer_ignores_new_reflection"): False}


def _without_wall_clock(value: Any) -> Any:
    """The snapshot without ``created_at`` (a first record is stamped when it is made, not from the conversation)
    and without :data:`ADDED_SINCE_THE_GOLDEN` in the records' configs."""
    if isinstance(value, dict):
        if "scope" in value and "observation" in value:  # a record's copy of the engine config
            value = {**value, "observation": dict(value["observation"])}
            for (section, name), default in ADDED_SINCE_THE_GOLDEN.items():
                if value[section].get(name, default) == default:
                    value[section].pop(name, None)
        return {k: _without_wall_clock(v) for k, v in value.items() if k != "created_at"}
    if isinstance(value, list):
        return [_without_wall_clock(v) for v in value]
    return value


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> str:
    return render_memories(tmp_path_factory.mktemp("engine"))


def test_the_golden_conversation_builds_the_pinned_memory(rendered: str) -> None:
    assert_golden("engine_memory.txt", rendered)


def test_the_revision_moves_with_the_memory(rendered: str) -> None:
    digest = hashlib.sha256(rendered.encode()).hexdigest()
    recorded = json.loads(REVISIONS.read_text(encoding="utf-8")) if REVISIONS.exists() else {}
    known = recorded.get(str(ENGINE_REVISION))
    if known is None:
        if not golden.UPDATE:
            pytest.fail(f"engine revision {ENGINE_REVISION} has no recorded memory digest in {REVISIONS}: record "
                        "it with python -m pytest --update-golden")
        recorded[str(ENGINE_REVISION)] = digest
        REVISIONS.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        golden.CHANGED.append(REVISIONS.name)
        return
    assert known == digest, (
        f"the engine builds another memory from the golden conversation than engine revision {ENGINE_REVISION} did "
        "(see the diff of tests/golden/engine_memory.txt). If that is meant, bump ENGINE_REVISION in "
        "om_eval/om/revision.py (every memory key moves with it, so no stale memory is reused), say why in "
        "CHANGELOG.md, and rewrite the golden files with python -m pytest --update-golden")


def test_the_changelog_says_why_the_revision_is_what_it_is() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").lower()
    assert f"engine revision {ENGINE_REVISION}" in changelog, (
        f"CHANGELOG.md does not mention engine revision {ENGINE_REVISION}: say what changed in the engine and why")
