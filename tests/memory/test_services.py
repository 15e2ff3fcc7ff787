"""The services the harness lends a system: stages follow the phase, so ingest and answer cost cannot be blurred,
and a call the system did not declare names the hook to set."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from om_eval.memory.services import HarnessServices
from om_eval.om.config import ConfigError, ModelSettings
from om_eval.om.model import ModelReply
from tests.systems.helpers import WordCounter

MODEL = ModelSettings(model="scripted/om-eval")


class _Client:
    def __init__(self) -> None:
        self.stages: list[str] = []

    async def complete(self, messages: Any, *, stage: str, settings: Any) -> ModelReply:
        self.stages.append(stage)
        return ModelReply("ok", settings.model, prompt_tokens=1, completion_tokens=1)

    async def embed(self, texts: Any, *, model: str, stage: str, options: Any) -> list[list[float]]:
        self.stages.append(stage)
        return [[1.0] for _ in texts]


def _services(**kwargs: Any) -> tuple[HarnessServices, _Client]:
    client = _Client()
    return HarnessServices(client, MODEL, WordCounter(), embedder=MODEL, system="probe", **kwargs), client


def test_calls_default_to_ingest_stages_while_building_and_query_while_answering() -> None:
    building, client = _services()
    asyncio.run(building.complete([{"role": "user", "content": "x"}]))
    asyncio.run(building.embed(["x"]))
    answering, _ = _services(answering=True)
    answering.client = client
    asyncio.run(answering.complete([{"role": "user", "content": "x"}]))
    asyncio.run(answering.embed(["x"]))
    assert client.stages == ["observer", "retrieval", "query", "query"]


def test_an_ingest_stage_claimed_while_answering_is_refused() -> None:
    answering, _ = _services(answering=True)
    with pytest.raises(ValueError, match=r"services.embed\(stage='retrieval'\) while answering"):
        asyncio.run(answering.embed(["x"], stage="retrieval"))
    with pytest.raises(ValueError, match="a system's calls are staged as observer, reflector, query"):
        asyncio.run(_services()[0].complete([{"role": "user", "content": "x"}], stage="judge"))  # type: ignore[arg-type]


def test_an_undeclared_service_names_the_hook() -> None:
    silent, _ = _services(declares_embedding=False)
    with pytest.raises(ConfigError, match="set uses_embedding_model = True"):
        asyncio.run(silent.embed(["x"]))
    mute = HarnessServices(_Client(), None, WordCounter(), system="probe", declares_observer=False)
    with pytest.raises(ConfigError, match="set uses_observer_model = True"):
        asyncio.run(mute.complete([{"role": "user", "content": "x"}]))
