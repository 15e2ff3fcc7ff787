"""Case 7: a run stored before a setting existed resumes in place once om-eval adds that setting.

The drill added a setting and found every stored run refused ("... delete the file to start the run over"), so an
old run's errors could no longer be retried. A run id leaves a new setting out at the value every earlier run had
(its pin in the run id rule), so the stored configuration, which lacks the setting, is compared the same way: at
that value the run resumes and the filled-in configuration is stored; away from it the run is another one (its id
moves), and under a forged equal id the writer still refuses, naming the setting.

The run stored "before the setting existed" is made by taking settings out of a stored run's configuration, as an
older om-eval wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from om_eval.common.identity import lookup
from om_eval.common.run_identity import RUN_ID_RULE
from om_eval.llm.providers import register_scripted
from om_eval.store import ConfigMismatchError, RunStore, store_path
from om_eval.store.records import RunInfo
from om_eval.testing.scripted.model import ScriptedModel
from tests.reliability.harness import Outcome, assert_consistent, assert_matches, invoke, outcome, query

#: Settings om-eval added after runs were stored, each classed by the run id rule in another way: omitted at a pin
#: (a boolean, a string, a whole dataset key) and left out of every id (``prompt.source``).
ADDED = ("om.observation.buffer_ignores_new_reflection", "om.retrieval", "dataset.benchmark", "prompt.source")


def forget(results: Path, paths: tuple[str, ...]) -> dict:
    """Take ``paths`` out of the stored run's configuration, as a file written before they existed holds it."""
    (path,) = (results / "store").glob("*.duckdb")
    with duckdb.connect(str(path)) as con:
        (text,) = con.execute("SELECT config_json FROM runs").fetchone()
        config = json.loads(text)
        for dotted in paths:
            *groups, leaf = dotted.split(".")
            inner = config
            for group in groups:
                inner = inner[group]
            del inner[leaf]
        con.execute("UPDATE runs SET config_json = ?", [json.dumps(config, sort_keys=True)])
    return config


def stored_config(results: Path, run_id: str | None = None) -> dict:
    rows = query(results, "SELECT run_id, config_json FROM runs")
    (text,) = [r["config_json"] for r in rows if run_id is None or r["run_id"] == run_id]
    return json.loads(text)


def test_an_old_run_resumes_in_place_with_new_settings_at_their_defaults(
    tmp_path: Path, reference: Callable[..., Outcome]
) -> None:
    name = "new-setting-actor"
    register_scripted(name, ScriptedModel(faults={"actor": ["bad_request"]}, history=None))
    command = (f"models.actor.model=scripted/{name}",)
    first = invoke(tmp_path, *command)
    assert first.code != 0, "the broken actor should leave one question in error"
    (run,) = query(tmp_path, "SELECT run_id FROM runs")
    filled = stored_config(tmp_path)
    old = forget(tmp_path, ADDED)
    assert old != filled
    for dotted in ADDED:  # each is where the run id leaves it out, so the run id is the one stored
        assert RUN_ID_RULE.leaves_out(dotted, lookup(filled, dotted), filled), dotted

    register_scripted(name, ScriptedModel(history=None))
    second = invoke(tmp_path, *command)
    assert second.code == 0, second.output[-2000:]
    assert "6 already done, 1 answered, 0 errors" in second.flat, second.output[-2000:]
    assert "start the run over" not in second.flat
    assert query(tmp_path, "SELECT run_id FROM runs") == [run], "the resumed run is the stored one"
    assert_consistent(tmp_path)
    assert_matches(outcome(tmp_path), reference())
    # The stored configuration is the filled-in one, and the invocation is on record.
    assert stored_config(tmp_path) == filled
    (registered,) = query(tmp_path, "SELECT registrations FROM runs")
    assert len(json.loads(registered["registrations"])) == 2


def test_a_new_setting_away_from_its_default_is_another_run(tmp_path: Path) -> None:
    assert invoke(tmp_path).code == 0
    (old,) = query(tmp_path, "SELECT run_id FROM runs")
    forget(tmp_path, ("om.observation.buffer_ignores_new_reflection",))
    before = outcome(tmp_path)

    changed = invoke(tmp_path, "om.observation.buffer_ignores_new_reflection=true")
    assert changed.code == 0, changed.output[-2000:]
    runs = {r["run_id"] for r in query(tmp_path, "SELECT run_id FROM runs")}
    assert len(runs) == 2 and old["run_id"] in runs, "a setting away from its default moves the run id"
    new = (runs - {old["run_id"]}).pop()
    assert stored_config(tmp_path, new)["om"]["observation"]["buffer_ignores_new_reflection"] is True
    # The stored run is left as it was.
    assert "buffer_ignores_new_reflection" not in stored_config(tmp_path, old["run_id"])["om"]["observation"]
    items = query(tmp_path, "SELECT question_id, status, hypothesis, label FROM items WHERE run_id = ?",
                  [old["run_id"]])
    assert {i["question_id"]: (i["status"], i["hypothesis"], i["label"]) for i in items} == before


def _run(config: dict) -> RunInfo:
    return RunInfo(run_id="r1", config_json=config, label="r1", experiment="test", memory_key="mem",
                   dataset_sha256="d" * 64)


@pytest.mark.parametrize(("stored", "asked", "named"), [
    # A setting new since the run was stored, asked away from its pin (only a forged id gets this far).
    ({"om": {"observation": {"message_tokens": 30000}}},
     {"om": {"observation": {"message_tokens": 30000, "buffer_ignores_new_reflection": True}}},
     "om.observation.buffer_ignores_new_reflection: (absent) -> true"),
    # A setting every run id hashes is never filled in, whatever its value.
    ({"om": {"observation": {}}}, {"om": {"observation": {"message_tokens": 30000}}},
     "om.observation.message_tokens: (absent) -> 30000"),
    # A setting the stored run has and the new code has not is a difference too.
    ({"om": {"retrieval": "off", "observation": {"message_tokens": 30000}}},
     {"om": {"observation": {"message_tokens": 30000}}}, 'om.retrieval: "off" -> (absent)'),
])
def test_the_writer_refuses_what_the_run_id_would_not_leave_out(
    tmp_path: Path, stored: dict, asked: dict, named: str
) -> None:
    path = store_path(tmp_path, "r1")
    with RunStore(path) as store:
        store.register_run(_run(stored))
        with pytest.raises(ConfigMismatchError, match="start the run over") as refused:
            store.register_run(_run(asked))
    assert named in str(refused.value)


def test_the_writer_fills_in_settings_at_their_pins(tmp_path: Path) -> None:
    stored = {"om": {"observation": {"message_tokens": 30000}}, "dataset": {"name": "mini"}}
    asked = {"om": {"observation": {"message_tokens": 30000, "buffer_ignores_new_reflection": False},
                    "retrieval": "off"},
             "dataset": {"name": "mini", "benchmark": "longmemeval", "verify": True},
             "memory_defaults": {"simple_om": {"distil_tokens": 50}}}
    path = store_path(tmp_path, "r1")
    with RunStore(path) as store:
        store.register_run(_run(stored))
        store.register_run(_run(asked))
        ((text,),) = store._read("SELECT config_json FROM runs", [])
    assert json.loads(text) == asked
