"""Issue 46 item 3: a key a provider echoes in its error text reaches no console, store, page or archive.

The drill's gateway answered 401 with ``Incorrect key sk-… refused``: the key appeared on the console, in
``items.error`` and ``llm_calls.error``, in ``om-eval show``, in ``report.html`` and in an ``export --partial``
archive. Here the loopback server does the same for a key given in the actor's provider options and for one litellm
reads from the environment, and every artefact a user can read is searched for both.
"""

from __future__ import annotations

import contextlib
import io
import zipfile
from pathlib import Path

import pytest

from om_eval.common.secrets import scrub_secrets
from tests.reliability.harness import invoke, query
from tests.reliability.hostile_server import SERVED, HostileServer, hostile  # noqa: F401  # the fixture
from tests.reliability.test_secrets import _stored_text

CONFIGURED = "sk-echo-configured-4242424242"
FROM_ENV = "sk-echo-environment-7373737373"


def _cli(*argv: str) -> tuple[int, str]:
    from om_eval.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = main(list(argv))
    return code, buffer.getvalue()


def _artefacts(results: Path, tmp_path: Path) -> dict[str, str]:
    """Every file under the results folder (stores as their table values), read as text; archives unpacked."""
    texts = {"store": _stored_text(results)}
    for path in [*results.rglob("*"), *tmp_path.glob("*.zip")]:
        if not path.is_file() or path.suffix == ".duckdb":
            continue
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                for name in archive.namelist():
                    texts[f"{path.name}:{name}"] = archive.read(name).decode("utf-8", errors="replace")
        else:
            texts[str(path)] = path.read_bytes().decode("utf-8", errors="replace")
    return texts


@pytest.mark.parametrize("where", ["provider_options", "environment"])
def test_a_key_echoed_by_a_401_is_found_nowhere(hostile: HostileServer, tmp_path: Path, where: str,  # noqa: F811
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    hostile.mode = "echo_key"
    results = tmp_path / "results"
    overrides = ["model@models.actor=openai_compatible", f"models.actor.model=openai/{SERVED}",
                 f"models.actor.provider_options.api_base={hostile.base}", "dataset.subset.first=2"]
    if where == "provider_options":
        key = CONFIGURED
        overrides.append(f"models.actor.provider_options.api_key={key}")
    else:
        key = FROM_ENV
        overrides.append("~models.actor.provider_options.api_key")
        monkeypatch.setenv("OPENAI_API_KEY", key)
    done = invoke(results, *overrides)
    assert done.code == 1, done.output[-2000:]
    errors = [row["error"] for row in query(results, "SELECT error FROM items")]
    assert errors and all("Incorrect key *** refused" in error for error in errors), errors
    assert any(key in request["headers"].get("authorization", "") for request in hostile.seen), "key never sent"

    run_id = query(results, "SELECT run_id FROM runs")[0]["run_id"]
    question = query(results, "SELECT question_id FROM items ORDER BY question_id LIMIT 1")[0]["question_id"]
    outputs = {"run": done.output,
               "show": _cli("show", "--results", str(results), run_id, question)[1],
               "show --json": _cli("show", "--results", str(results), "--json", run_id, question)[1],
               "view": _cli("view", "--results", str(results))[1],
               "export": _cli("export", "--results", str(results), "--partial", run_id,
                              "--out", str(tmp_path / "partial.zip"))[1]}
    texts = {**outputs, **_artefacts(results, tmp_path)}
    assert any(name.endswith(".html") for name in texts), "view wrote no page to search"
    assert any(name.startswith("partial-partial.zip:") for name in texts), f"no archive to search: {outputs['export']}"
    leaks = [name for name, text in texts.items() if key in text]
    assert not leaks, f"the echoed key is in: {leaks}"


def test_scrubbing_replaces_remembered_and_environment_secrets_longest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from om_eval.common.secrets import remember_secrets

    remember_secrets({"extra_headers": {"Authorization": "Bearer sk-remembered-000111222"}, "api_base": "http://h"})
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdefgh")
    monkeypatch.setenv("MAX_TOKENS", "1234567890")  # a size, not a secret
    text = "401: Bearer sk-remembered-000111222 / sk-remembered-000111222 / tok-abcdefgh at http://h, 1234567890"
    assert scrub_secrets(text) == "401: *** / *** / *** at http://h, 1234567890"


def test_the_log_filter_leaves_a_malformed_record_to_its_handler() -> None:
    import logging

    from om_eval.common.secrets import ScrubSecrets

    record = logging.LogRecord("lib", logging.WARNING, __file__, 1, "%d items", ("x",), None)
    assert ScrubSecrets().filter(record) is True
