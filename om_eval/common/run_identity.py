"""The two identities of om-eval, in one place: what enters a run id and what enters a memory key.

Both are :class:`~om_eval.common.identity.IdentityRule` s. A setting omitted at its default is omitted at the
value pinned here (the default every earlier run had), never at the live default: see that module for why.

Adding a setting: class it in each rule whose mapping holds it. A setting that did not exist when identities were
first stored goes under ``omitted_at`` with its default, so earlier runs keep their ids; ``tests/common/
test_run_identity.py`` fails until every setting of the run config and the engine config is classed, and when a
pinned value no longer equals the live default. What moved and why goes in ``CHANGELOG.md``.

The rules are data about settings and import nothing but :mod:`om_eval.common.identity`, so they sit at the bottom:
the run store, the replay and the run spec all read them.
"""

from __future__ import annotations

from om_eval.common.identity import IdentityRule

#: The OM settings every run id hashes, whatever their value: those that existed when run ids were first stored.
_RUN_HASHED_OM = (
    "boundary_delimiters", "context_layout", "obscure_thread_ids", "other_threads_limit", "other_threads_order",
    "share_token_budget", "thread_id_hash", "token_estimator",
    "observation.batch_mode", "observation.block_after", "observation.buffer_activation",
    "observation.buffer_candidates", "observation.buffer_tokens", "observation.instruction",
    "observation.max_tokens_per_batch", "observation.message_tokens", "observation.previous_observer_tokens",
    "observation.request_layout", "observation.thread_title",
    "reflection.block_after", "reflection.buffer_activation", "reflection.instruction", "reflection.observation_tokens",
    "reflection.retry_after_growth", "reflection.start_level",
    "replay.buffering", "replay.final_flush", "replay.pending_accounting", "replay.scope", "replay.session_order",
    "replay.skip_empty_turns", "replay.turn_spacing_seconds", "replay.unit",
)

#: Settings added after run ids were first stored, with the value every earlier run had.
_LATER_OM_SETTINGS = {
    "reply_checks": "om_eval",
    "mastra_release": "v1_10",
    "thread_sections": "om_eval",
    "retrieval": "off",
    "retrieval_search": "off",
    "retrieval_embedding_model": "openai/text-embedding-3-small",
    "retrieval_instructions": None,
    "observation.activation_counts_reminder": False,
    "observation.buffer_ignores_new_reflection": False,
}

#: The engine revision (:data:`~om_eval.om.revision.ENGINE_REVISION`) of every OM run stored before the revision
#: entered run ids. An OM run's id holds the revision only once it moves past this one, so those runs keep their ids,
#: and a run an engine change would answer differently is a new run instead of the old one continued.
RUN_ID_ENGINE_REVISION = 1

#: Options of seam systems added after their runs were first stored, by system: at these values they enter neither
#: the run id nor the memory key, so earlier runs keep both.
LATER_MEMORY_OPTIONS: dict[str, dict[str, object]] = {
    "mem0": {"extraction_schema": False},
}

RUN_ID_RULE = IdentityRule(
    name="run id",
    hashed=frozenset({
        *(f"om.{path}" for path in _RUN_HASHED_OM),
        "prompt.", "models.", "baseline.", "memory.", "judge.mode", "judge.parse", "judge.no_verdict",
        "dataset.name", "dataset.path", "dataset.synthetic.",
        *(f"dataset.subset.{key}" for key in ("ids", "types", "abstention", "first", "sample", "per_type", "seed")),
    }),
    omitted_at={
        **{f"om.{path}": value for path, value in _LATER_OM_SETTINGS.items()},
        "dataset.benchmark": "longmemeval",
        "dataset.speaker_roles": None,
        "dataset.corrections": None,
        "dataset.audit_path": None,
        "dataset.subset.haystacks": None,
        "dataset.tier": None,
        "beam": {"rounding": "upstream"},  # BEAM's scoring: the whole group is left out at its default
        "beam.rounding": "upstream",
        # prompt=mastra_exact's release (its resolved value: naming it or not is one run) and Observer variant.
        "prompt.mastra_version": None,
        "prompt.mastra_variant": "current",
        **{f"memory.{option}": value for options in LATER_MEMORY_OPTIONS.values() for option, value in options.items()},
    },
    # Nothing here changes results: the data file is pinned by its sha256 (hashed instead of ``verify``), the
    # official judge file likewise (``source``), and a panel only re-judges.
    # memory_defaults is read into the memory group by its config file; the group is what enters.
    # prompt.source: where the package comes from; it is checked against the pinned hashes, so it is the same text.
    left_out=frozenset({"run.", "experiment", "dataset.verify", "judge.source", "judge.panel", "memory_defaults",
                        "prompt.source",
                        "memory_defaults.",
                        # A price changes what a run costs, never what it answers; nor do a call's wait and retries.
                        *(f"models.{role}.provider_options.price" for role in ("observer", "reflector", "actor",
                                                                              "judge", "embedding", "small")),
                        *(f"models.{role}.provider_options.request" for role in ("observer", "reflector", "actor",
                                                                                "judge", "embedding", "small"))}),
)

MEMORY_KEY_RULE = IdentityRule(
    name="memory key",
    hashed=frozenset({
        "om.scope", "om.share_token_budget", "om.prompt_variant", "om.obscure_thread_ids", "om.boundary_delimiters",
        *(f"om.observation.{key}" for key in (
            "message_tokens", "buffer_tokens", "buffer_activation", "block_after", "max_tokens_per_batch",
            "previous_observer_tokens", "instruction", "thread_title", "batch_mode", "request_layout")),
        "om.observation.model.",
        *(f"om.reflection.{key}" for key in (
            "observation_tokens", "buffer_activation", "block_after", "start_level", "instruction",
            "retry_after_growth")),
        "om.reflection.model.",
        *(f"replay.{key}" for key in (
            "final_flush", "pending_accounting", "scope", "session_order", "skip_empty_turns", "turn_spacing_seconds",
            "unit")),
    }),
    omitted_at={
        **{f"om.{path}": value for path, value in _LATER_OM_SETTINGS.items()},
        "om.resource_buffering": False,
        "om.observation.buffer_candidates": "unbuffered",
        "replay.buffering": False,
    },
    only_with={"om.thread_id_hash": "om.obscure_thread_ids"},
    # What the actor sees of a memory does not change what the memory holds.
    left_out=frozenset({"om.context_layout", "om.other_threads_order", "om.other_threads_limit",
                        "om.observation.model.provider_options.price", "om.reflection.model.provider_options.price",
                        "om.observation.model.provider_options.request",
                        "om.reflection.model.provider_options.request"}),
)
