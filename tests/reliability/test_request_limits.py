"""Issue 46 item 5: how long one model call is waited for, and how often it is retried, is set per model.

The drill's slow endpoint held one call for about an hour: a fixed 600 s timeout with 5 retries, and no setting to
lower either. ``provider_options.request`` now sets both per model; neither is sent, and neither changes an identity.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from om_eval.llm.client import ClientSettings, LLMCallError, LLMClient
from om_eval.om.config import ConfigError, ModelSettings
from tests.reliability.harness import invoke
from tests.reliability.hostile_server import SERVED, HostileServer, hostile  # noqa: F401  # the fixture
from tests.runs import compose_run

QUESTION = [{"role": "user", "content": "Which city did I move to?"}]


def test_a_slow_endpoint_fails_after_the_models_own_timeout_and_retries(hostile: HostileServer) -> None:  # noqa: F811
    hostile.delay = 3.0
    settings = ModelSettings(model=f"openai/{SERVED}", temperature=0.0, provider_options={
        "api_base": hostile.base, "api_key": "none", "request": {"timeout_s": 0.3, "max_retries": 1}})
    settings.validate("models.actor")
    client = LLMClient(cache=None, settings=ClientSettings(backoff_base_s=0.001, backoff_max_s=0.01))
    hostile.mode = "ok"  # litellm's first call in a process sets itself up for seconds: not what is timed here
    asyncio.run(client.complete(QUESTION, stage="actor", settings=settings))
    hostile.mode, hostile.seen = "slow", []
    started = time.monotonic()
    with pytest.raises(LLMCallError, match="after 1 retries"):
        asyncio.run(client.complete(QUESTION, stage="actor", settings=settings))
    assert time.monotonic() - started < 2.5  # two attempts of 0.3 s (plus litellm's 5 s grace never reached)
    assert len(hostile.seen) == 2
    assert "request" not in hostile.seen[0]["body"] and "timeout_s" not in str(hostile.seen[0]["body"])


@pytest.mark.parametrize(("value", "said"), [({"timeout_s": 0}, "timeout_s must be a number of seconds > 0"),
                                             ({"max_retries": -1}, "max_retries must be a whole number >= 0"),
                                             ({"patience": 3}, "must be a mapping of timeout_s")])
def test_bad_limits_are_refused_naming_the_option(value: dict, said: str) -> None:
    settings = ModelSettings(model="openai/gpt-4o", provider_options={"request": value})
    with pytest.raises(ConfigError, match=said) as refused:
        settings.validate("models.actor")
    assert "models.actor.provider_options.request" in str(refused.value)


def test_limits_change_no_run_id_and_no_memory(tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    from om_eval.experiment.job import RunJob
    from om_eval.experiment.spec import spec_from_config

    def job(*overrides: str) -> RunJob:
        return RunJob(spec_from_config(OmegaConf.to_container(compose_run(tmp_path, *overrides), resolve=True)))

    plain = job()
    limited = job("+models.actor.provider_options.request.timeout_s=30",
                  "+models.observer.provider_options.request.max_retries=1")
    assert limited.spec.actor.provider_options["request"] == {"timeout_s": 30}
    assert limited.run_id == plain.run_id
    assert limited.memory_key == plain.memory_key


def test_a_run_names_a_bad_limit_before_it_starts(tmp_path: Path) -> None:
    done = invoke(tmp_path, "+models.judge.provider_options.request.timeout_s=-5")
    assert done.code == 1 and "models.judge.provider_options.request" in done.flat, done.output[-2000:]
