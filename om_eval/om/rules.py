"""Where @mastra/memory releases (and om-eval's own robustness rules) differ, as data.

The engine follows one :class:`EngineRules`, chosen once from the config by :func:`rules_for`: the rules of the
release ``OMConfig.mastra_release`` names (:data:`RELEASE_RULES`), with the reply rules of ``reply_checks`` and the
section merge of ``thread_sections``. The engine reads the fields, never the release: this module is the one place
to read what a release does, and the one place to add the next (a new :class:`EngineRules` entry, a new
``MastraRelease`` value, and the fields where it differs).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from om_eval.om.reply_lines import DegenerateStrategy

if TYPE_CHECKING:
    from om_eval.om.config import MastraRelease, OMConfig, ReplyChecks, ThreadSections

#: What happens after a synchronous reflection failed: ``wait_for_growth`` (om-eval: the next automatic reflection
#: waits until the observations grew, longer after each failure; the build is an error), ``retry`` (1.10: reflect
#: again at the next check; the build is an error, as 1.10 aborts the run) or ``skip_while_unchanged`` (1.31:
#: logged, the memory stays unreflected, and the same observations are not reflected again).
FailedReflection = Literal["wait_for_growth", "retry", "skip_while_unchanged"]

#: 1.31's line between the active observations and the buffered chunks in a buffering call's previous observations.
BUFFERED_MARK = "\n\n--- BUFFERED (pending activation) ---\n\n"


@dataclass(frozen=True)
class EngineRules:
    """Every behaviour of the engine that depends on the release it follows or on om-eval's reply rules."""

    release: MastraRelease
    """The @mastra/memory release these rules follow (``v1_10`` or ``v1_31``)."""
    history_lines: bool
    """1.15+: message history in the line format (:mod:`om_eval.om.history_lines`) for the Observer and for the
    other conversations the actor sees; 1.10 writes message blocks."""
    buffered_mark: str
    """What joins the active observations and the buffered chunks in a buffering call's previous observations."""
    hint_sections: bool
    """1.27+: the Observer and Reflector are asked for the continuation hints as optional sections (a buffered call
    for none), the Reflector is shown the thread's hints so far, and a thread-scope reflection's hints are kept.
    1.10 asks in its older way and drops a reflection's suggested response."""
    buffered_call_shows_hints: bool
    """A buffering pass's Observer call is shown the thread's hints (1.10); 1.31 shows it none."""
    sync_observation_keeps_chunks: bool
    """A synchronous observation leaves the buffered chunks in place, to be activated later (1.31); 1.10 voids them
    (every buffered message was just observed) and buffering starts over."""
    resource_turn_history: bool
    """1.31, resource scope: a turn's history holds every unobserved message, other threads start at the record's
    cursor, each thread hands the Observer its messages after its own cursor, newest thread first, and the asked
    thread's entry also holds its turn's history."""
    buffered_steps: MastraRelease
    """Whose per-step schedule buffered thread-scope memories follow (:mod:`om_eval.om.buffering`)."""
    observes_at_first_step: bool
    """1.31 checks the observation threshold at the first step of a turn too; 1.10 only at later steps."""
    reflects_at_threshold: bool
    """Reflection starts at the threshold (1.31, ``>=``) rather than above it (1.10, ``>``)."""
    reflector_anchor_ids: bool
    """The Reflector reads observations with their anchor ids (1.10); 1.31 strips them."""
    empty_reflection_fails: bool
    """An empty reflection is a failed attempt (1.31); 1.10 reads it as any other reply."""
    degenerate_detector: DegenerateStrategy
    """The repetition-loop detector run on replies (:func:`om_eval.om.reply_lines.detect_degenerate`)."""
    keep_link_labels: bool
    """1.27+: markdown link labels stay in the observations the actor reads."""
    system_reminders: bool
    """1.11+: the actor's instructions explain ``<system-reminder>`` messages, and the reminder is the shorter one."""
    mastra_failed_reflection: FailedReflection
    """What the release does after a failed reflection; :attr:`failed_reflection` applies it under Mastra's reply
    rules only."""
    reference_accounting: tuple[str, str]
    """How the reference counted pending tokens (``om.replay.pending_accounting``) and what the reference is: Mastra's
    published data for 1.10, the package itself for 1.31 (reports name a difference as a departure)."""
    reply_checks: ReplyChecks = "om_eval"
    """Which Observer and Reflector replies are applied (``OMConfig.reply_checks``)."""
    thread_sections: ThreadSections = "om_eval"
    """How a thread's new observations join its section in resource scope (``OMConfig.thread_sections``)."""

    @property
    def applies_unproductive_reflection(self) -> bool:
        """Mastra applies any reflection it stops at; om-eval never one that is no smaller than its input."""
        return self.reply_checks == "mastra"

    @property
    def failed_reflection(self) -> FailedReflection:
        """What follows a failed synchronous reflection under these rules."""
        return self.mastra_failed_reflection if self.reply_checks == "mastra" else "wait_for_growth"


RELEASE_RULES: dict[str, EngineRules] = {
    "v1_10": EngineRules(
        release="v1_10", history_lines=False, buffered_mark="\n\n", hint_sections=False,
        buffered_call_shows_hints=True, sync_observation_keeps_chunks=False, resource_turn_history=False,
        buffered_steps="v1_10", observes_at_first_step=False, reflects_at_threshold=False, reflector_anchor_ids=True,
        empty_reflection_fails=False, degenerate_detector="v1.10", keep_link_labels=False, system_reminders=False,
        mastra_failed_reflection="retry", reference_accounting=("mastra_dev", "Mastra's data"),
    ),
    "v1_31": EngineRules(
        release="v1_31", history_lines=True, buffered_mark=BUFFERED_MARK, hint_sections=True,
        buffered_call_shows_hints=False, sync_observation_keeps_chunks=True, resource_turn_history=True,
        buffered_steps="v1_31", observes_at_first_step=True, reflects_at_threshold=True, reflector_anchor_ids=False,
        empty_reflection_fails=True, degenerate_detector="v1.31", keep_link_labels=True, system_reminders=True,
        mastra_failed_reflection="skip_while_unchanged", reference_accounting=("mastra_step", "the 1.31 package"),
    ),
}


def release_rules(release: str) -> EngineRules:
    """The rules of ``release`` with om-eval's reply rules (a stored config's release may be read this way)."""
    try:
        return RELEASE_RULES[release]
    except KeyError:
        raise ValueError(f"unknown mastra_release {release!r}; known: {', '.join(RELEASE_RULES)}") from None


def rules_for(config: OMConfig) -> EngineRules:
    """The rules ``config`` asks for: its release's, with its reply rules and section merge."""
    return replace(release_rules(config.mastra_release), reply_checks=config.reply_checks,
                   thread_sections=config.thread_sections)
