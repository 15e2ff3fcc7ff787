"""A credential given on the command line reaches no store, log, report, export, snapshot, page or key.

Issue 20 case 1: the run label joined the raw overrides, memory snapshots kept the observer's provider options in
clear, and the unredacted values fed the memory and cache keys. Here secrets go into every role's provider
options through the real entry point (so the label is built from Hydra's overrides), then every artefact a user
can read is searched for them, and a second run with rotated secrets must reuse every memory and cached call.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from om_eval.experiment.app import redact_override
from tests.reliability.harness import invoke, query

ROLES = ("observer", "reflector", "actor", "judge")
TABLE_QUERY = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"


def _secret_overrides(tag: str) -> list[str]:
    # The scripted models run in this process and take no endpoint (an api_key there is refused as unused), so the
    # secrets go where litellm passes them on to the provider: a credential and an Authorization header.
    overrides = [f"+models.{role}.provider_options.litellm.vertex_credentials=sk-{tag}-{role}-0042"
                 for role in ROLES]
    overrides.append(f"+models.actor.provider_options.litellm.headers.Authorization=Bearer-{tag}-header")
    return overrides


def _cli_output(*argv: str) -> str:
    from om_eval.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        main(list(argv))
    return buffer.getvalue()


def _stored_text(results: Path) -> str:
    """Every value of every table of every run file, as text."""
    import duckdb

    chunks = []
    for path in (results / "store").glob("*.duckdb"):
        with duckdb.connect(str(path), read_only=True) as db:
            for (table,) in db.execute(TABLE_QUERY).fetchall():
                for row in db.execute(f'SELECT * FROM "{table}"').fetchall():
                    chunks.extend(str(value) for value in row)
    return "\n".join(chunks)


def test_redact_override_hides_values_under_secret_keys_only() -> None:
    assert redact_override("+models.actor.provider_options.api_key=sk-1") == (
        "+models.actor.provider_options.api_key=***")
    assert redact_override("models.judge.provider_options.extra_headers.Authorization=Bearer x") == (
        "models.judge.provider_options.extra_headers.Authorization=***")
    assert redact_override("~models.actor.provider_options.api_key") == "~models.actor.provider_options.api_key"
    assert redact_override("om.observation.max_tokens_per_batch=5000") == "om.observation.max_tokens_per_batch=5000"
    assert redact_override("model@models.actor=gpt-4o") == "model@models.actor=gpt-4o"


def test_secrets_on_the_command_line_leak_nowhere(tmp_path: Path) -> None:
    results = tmp_path / "results"
    first = invoke(results, *_secret_overrides("alpha"))
    assert first.code == 0, first.output
    report = _cli_output("report", "--results", str(results), "--wide", "--markdown", str(tmp_path / "r.md"),
                         "--csv", str(tmp_path / "r.csv"))
    run_id = query(results, "SELECT run_id FROM runs")[0]["run_id"]
    question = query(results, "SELECT question_id FROM items ORDER BY question_id LIMIT 1")[0]["question_id"]
    show = _cli_output("show", "--results", str(results), "--json", run_id, question)
    _cli_output("view", "--results", str(results))

    texts = {"console": first.output, "report": report, "show --json": show, "store": _stored_text(results)}
    for path in [*results.rglob("*"), tmp_path / "r.md", tmp_path / "r.csv"]:
        if path.is_file() and path.suffix != ".duckdb":
            texts[str(path)] = path.read_text(encoding="utf-8", errors="replace")
    leaks = [where for where, text in texts.items() if "alpha" in text]
    assert not leaks, f"a secret leaked into: {leaks}"
    assert "vertex_credentials=***" in query(results, "SELECT label FROM runs")[0]["label"]
    assert any(p.suffix == ".html" for p in results.rglob("*")), "view wrote no page to search"

    rotated = invoke(results, *_secret_overrides("bravo"))
    assert rotated.code == 0, rotated.output
    assert len(query(results, "SELECT run_id FROM runs")) == 1, "rotating credentials must be the same run"
    assert "bravo" not in _stored_text(results)


def test_rotated_credentials_keep_memory_and_cache_keys() -> None:
    from om_eval.llm.request import LLMRequest, cache_key
    from om_eval.om.config import ModelSettings, ObservationConfig, OMConfig
    from om_eval.systems.om.identity import memory_hash
    from om_eval.systems.om.replay import ReplayConfig

    def om(key: str) -> OMConfig:
        model = ModelSettings(model="openai/gpt-4o", provider_options={"api_key": key})
        return OMConfig(observation=ObservationConfig(model=model))

    assert memory_hash(om("sk-1"), ReplayConfig(), "tiktoken/o200k_base") == memory_hash(
        om("sk-2"), ReplayConfig(), "tiktoken/o200k_base")
    plain = OMConfig(observation=ObservationConfig(model=ModelSettings(model="openai/gpt-4o")))
    assert memory_hash(plain, ReplayConfig(), "x") != memory_hash(om("sk-1"), ReplayConfig(), "x")

    def request(key: str, temperature: float = 0) -> LLMRequest:
        return LLMRequest.build("openai/gpt-4o", [{"role": "user", "content": "hi"}], temperature=temperature,
                                api_key=key)

    assert cache_key(request("sk-1")) == cache_key(request("sk-2"))
    assert cache_key(request("sk-1")) != cache_key(request("sk-1", temperature=0.5))
    assert "sk-1" in request("sk-1").payload, "what is sent keeps the credential"
