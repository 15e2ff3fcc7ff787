"""Whose words the engine sends (om_eval.om.wording), offline: no pack is rendered here.

The wording of a real pack is compared with the package in ``tests/om/test_mastra_exact_differential.py``; these
tests check the choice and its checks: om-eval's words by default, a pack only with ``prompt_variant="mastra_exact"``
and the engine settings of its release, the ladder capped at the release's levels.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest

from om_eval.om.config import ConfigError, ModelSettings, ObservationConfig, OMConfig, ReflectionConfig
from om_eval.om.exact import RELEASES, PromptPack
from om_eval.om.history_lines import format_history_lines, history_line_sections
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ModelReply
from om_eval.om.records import Message
from om_eval.om.reflector import reflect_observations
from om_eval.om.tokens import make_counter
from om_eval.om.wording import (
    PARAPHRASE,
    MastraWording,
    Paraphrase,
    pack_identity,
    release_conflicts,
    release_for,
    wording_for,
)

BENCHMARK_ERA = OMConfig(
    scope="resource", observation=ObservationConfig(buffer_tokens=False, previous_observer_tokens=False,
                                                    request_layout="single"),
    context_layout="single", boundary_delimiters=False, obscure_thread_ids=True,
)
V1_31 = OMConfig(mastra_release="v1_31", observation=ObservationConfig(previous_observer_tokens=False),
                 reflection=ReflectionConfig(start_level="auto"), thread_sections="mastra")


def empty_pack(version: str) -> PromptPack:
    """A pack of ``version`` with no templates: enough for the checks, which read only its release."""
    release = RELEASES[version]
    assert release.pack_sha256 is not None
    return PromptPack(version, release.integrity, "current", release.builders, {}, {}, release.pack_sha256)


def exact(config: OMConfig) -> OMConfig:
    return dataclasses.replace(config, prompt_variant="mastra_exact")


def test_the_engine_speaks_om_evals_words_unless_given_a_pack() -> None:
    memory = ObservationalMemory(OMConfig(), observer=object())  # type: ignore[arg-type]  # never called
    assert memory.wording is PARAPHRASE and PARAPHRASE.identity == "paraphrase"
    with pytest.raises(ConfigError, match=r"prompt_variant='mastra_exact' reads Mastra's own prompts.*load_pack"):
        ObservationalMemory(exact(OMConfig()), observer=object())  # type: ignore[arg-type]


def test_a_pack_needs_mastra_exact_and_its_releases_engine() -> None:
    with pytest.raises(ConfigError, match=r"1\.10\.0 prompt pack was given, but prompt_variant='current'"):
        wording_for(OMConfig(), empty_pack("1.10.0"))
    assert isinstance(wording_for(exact(OMConfig()), empty_pack("1.10.0")), MastraWording)
    assert isinstance(wording_for(exact(BENCHMARK_ERA), empty_pack("1.3.0")), MastraWording)
    assert isinstance(wording_for(exact(V1_31), empty_pack("1.31.0")), MastraWording)
    with pytest.raises(ConfigError) as refused:
        wording_for(exact(OMConfig()), empty_pack("1.3.0"))
    message = str(refused.value)
    for named in ("observation.request_layout='split' (it needs 'single'", "context_layout='chunked'",
                  "observation.previous_observer_tokens=2000 (it needs False", "boundary_delimiters=True",
                  "or the pack of 1.10.0"):
        assert named in message, named


def test_the_release_an_engine_follows() -> None:
    assert release_for(OMConfig()) == "1.10.0"
    assert release_for(BENCHMARK_ERA) == "1.3.0"
    assert release_for(V1_31) == "1.31.0"
    for config in (OMConfig(), BENCHMARK_ERA, V1_31):
        assert release_conflicts(config, release_for(config)) == []


@pytest.mark.parametrize(("change", "option"), [
    ({"observation": ObservationConfig(buffer_tokens=False, previous_observer_tokens=0, request_layout="single")},
     "observation.previous_observer_tokens"),  # 0 shows no previous observations: not 1.3's False
    ({"observation": ObservationConfig(buffer_tokens=False, previous_observer_tokens=False, request_layout="single",
                                       instruction="be brief")}, "observation.instruction"),
    ({"reflection": ReflectionConfig(instruction="be brief")}, "reflection.instruction"),
    ({"observation": ObservationConfig(buffer_tokens=False, previous_observer_tokens=False, request_layout="single",
                                       thread_title=True)}, "observation.thread_title"),
    ({"reflection": ReflectionConfig(start_level=3)}, "reflection.start_level"),
    ({"mastra_release": "v1_31"}, "mastra_release"),
])
def test_what_1_3_cannot_be_filled_for(change: dict[str, Any], option: str) -> None:
    conflicts = release_conflicts(dataclasses.replace(BENCHMARK_ERA, **change), "1.3.0")
    assert [c.option for c in conflicts] == [option]


def test_retrieval_mode_is_not_worded() -> None:
    (conflict,) = release_conflicts(dataclasses.replace(V1_31, retrieval="resource"), "1.31.0")
    assert conflict.option == "retrieval" and "does not word retrieval mode" in conflict.describe()


def test_a_packs_identity_is_known_without_it() -> None:
    for version, release in RELEASES.items():
        assert release.pack_sha256 is not None
        assert pack_identity(version) == empty_pack(version).identity
    assert pack_identity("1.3.0", "legacy").startswith("mastra@1.3.0/legacy#")
    with pytest.raises(ConfigError, match=r"1\.10\.0 has no prompt variant 'legacy'"):
        pack_identity("1.10.0", "legacy")


def test_history_lines_one_text_per_message() -> None:
    start = datetime(2024, 3, 5, 14, 21)
    messages = [Message(f"m{i}", "t", ("user", "assistant")[i % 2], text, start + timedelta(minutes=minutes))
                for i, (text, minutes) in enumerate([("hello", 0), ("", 0), ("same minute", 0), ("later", 7),
                                                     ("next day", 60 * 24)])]
    sections = history_line_sections(messages)
    assert len(sections) == len(messages) and sections[1] == ""
    assert "\n".join(s for s in sections if s) == format_history_lines(messages)
    assert sections[2] == "User: same minute" and sections[4].startswith("Mar 6 2024:\n")


class TwoLevels(Paraphrase):
    """om-eval's words with a release's two compression levels (as 1.1's one retry)."""

    max_compression_level = 1


class Stubborn:
    """A Reflector that never compresses: the ladder climbs as far as it may."""

    def __init__(self) -> None:
        self.levels: list[str] = []

    async def complete(self, messages: Sequence[Any], *, stage: str, settings: ModelSettings) -> ModelReply:
        self.levels.append(messages[-1]["content"])
        body = "\n".join(f"* 🔴 (10:0{i}) the user said fact {i} about the garden" for i in range(6))
        return ModelReply(f"<observations>\nDate: Mar 5, 2024\n{body}\n</observations>", "test/reflector")


def test_the_ladder_stops_at_the_releases_last_level() -> None:
    observations = "Date: Mar 5, 2024\n" + "\n".join(f"* 🔴 (10:0{i}) the user said fact {i} about the garden"
                                                     for i in range(6))
    model = Stubborn()
    result = asyncio.run(reflect_observations(model, ModelSettings(model="test/reflector"), observations, target=5,
                                              start_level=0, counter=make_counter("chars"), checks="mastra",
                                              wording=TwoLevels()))
    assert [a.level for a in result.attempts] == [0, 1]
    with pytest.raises(ValueError, match="these prompts have levels 0-1"):
        asyncio.run(reflect_observations(model, ModelSettings(model="test/reflector"), observations, target=5,
                                         start_level=2, counter=make_counter("chars"), wording=TwoLevels()))
