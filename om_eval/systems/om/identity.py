"""How an OM memory build is named: its *memory hash* (config, replay protocol, prompt wording, token estimator),
the memory key every answering variant of the same memory finds it by."""

from __future__ import annotations

from dataclasses import asdict

from om_eval.common.files import short_hash
from om_eval.common.run_identity import MEMORY_KEY_RULE
from om_eval.common.secrets import redact_secrets
from om_eval.llm.request import canonical_json
from om_eval.om.config import OMConfig
from om_eval.om.prompts import PROMPT_FILES, prompt_set_hash
from om_eval.om.revision import ENGINE_REVISION
from om_eval.systems.om.replay import ReplayConfig

#: The prompt files whose wording shapes a memory: every OM prompt file but the context text, which only shapes
#: what the actor sees (a new variant's file joins by itself).
MEMORY_PROMPTS = tuple(name for name in PROMPT_FILES if name != "context")


def memory_hash(om_config: OMConfig, replay: ReplayConfig, counter_name: str, prompts: str | None = None) -> str:
    """Identity of a memory build: same hash, same memory (given a deterministic, cached observer).

    The settings that enter are chosen by :data:`~om_eval.common.run_identity.MEMORY_KEY_RULE`; credentials never do.
    ``prompts``: the identity of the prompts the models read when they are not om-eval's own (a Mastra pack's,
    :func:`~om_eval.om.wording.pack_identity`); om-eval's own are hashed from their files.
    """
    payload = {
        **MEMORY_KEY_RULE.view({"om": redact_secrets(om_config.to_dict()), "replay": asdict(replay)}),
        "prompts": prompts or prompt_set_hash(MEMORY_PROMPTS),
        "tokens": counter_name,
        "engine_revision": ENGINE_REVISION,
    }
    return short_hash(canonical_json(payload))
