"""One definition per setting: the run config's OM schema is made from the engine's dataclasses, and a setting added
to one of them reaches the schema; classed as a later setting by the identity rule, it keeps every stored run id."""

from __future__ import annotations

from dataclasses import dataclass, fields

from om_eval.bench.baseline import BaselineConfig
from om_eval.common.identity import IdentityRule
from om_eval.common.run_identity import RUN_ID_RULE
from om_eval.experiment.run_options import RunOptions
from om_eval.experiment.schema import (
    ELSEWHERE,
    RUN_DEFAULTS,
    BaselineSchema,
    ModelSchema,
    ObservationSchema,
    OMSchema,
    ReflectionSchema,
    ReplaySchema,
    RunSchema,
    field_help,
    schema_of,
)
from om_eval.om.config import (
    ModelSettings,
    ObservationConfig,
    OMConfig,
    ReflectionConfig,
)
from om_eval.systems.om.replay import ReplayConfig

PAIRS = [(ObservationConfig, ObservationSchema), (ReflectionConfig, ReflectionSchema), (OMConfig, OMSchema),
         (ReplayConfig, ReplaySchema), (BaselineConfig, BaselineSchema), (RunOptions, RunSchema),
         (ModelSettings, ModelSchema)]


def test_every_engine_setting_is_in_the_schema_once_with_its_default_and_help() -> None:
    for engine, schema in PAIRS:
        held = {f.name: f for f in fields(schema)}
        for f in fields(engine):
            if f.name in ELSEWHERE.get(engine, ()):
                continue  # held under another path (or, for OMConfig's nested groups, by their own schema)
            assert held[f.name].default == RUN_DEFAULTS.get(engine, {}).get(f.name, f.default), (engine, f.name)
            assert held[f.name].metadata["help"], f"{engine.__name__}.{f.name} has no help text"


def test_a_new_setting_needs_one_dataclass_field_and_keeps_run_ids() -> None:
    @dataclass(frozen=True)
    class WithNewKnob(ObservationConfig):
        new_knob: bool = False
        """A setting added after runs were stored."""

    schema = schema_of(WithNewKnob, "WithNewKnobSchema")
    (knob,) = [f for f in fields(schema) if f.name == "new_knob"]
    assert knob.default is False and knob.metadata["help"] == "A setting added after runs were stored."
    # Classed as a later setting, omitted at the value earlier runs had: their ids hold, a change enters.
    assert RUN_ID_RULE.kind_of("om.observation.new_knob") is None
    rule = IdentityRule(name="run id", hashed=RUN_ID_RULE.hashed,
                        omitted_at={**RUN_ID_RULE.omitted_at, "om.observation.new_knob": False})
    stored = {"om": {"observation": {"message_tokens": 100, "new_knob": False}}}
    assert rule.view(stored) == {"om": {"observation": {"message_tokens": 100}}}
    changed = {"om": {"observation": {"message_tokens": 100, "new_knob": True}}}
    assert rule.view(changed) == changed


def test_the_help_text_is_the_docstring_under_the_field() -> None:
    assert field_help(ReplayConfig)["final_flush"].startswith("Observe whatever is still pending")
