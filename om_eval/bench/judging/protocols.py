"""The judge panel: one set of stored answers graded under several judge protocols at once.

A *protocol* is what a published score silently fixes besides the judge model: which templates the judge reads
and how its reply is turned into a verdict. Scores on the same answers move with it (on LoCoMo, the judge prompt
alone moves them by tens of points), so ``om-eval rejudge RUN judge=panel`` grades a run under each protocol and
the report shows how far its score moves and which questions flip.

=================  ================  =====================================================================
protocol           templates         verdict
=================  ================  =====================================================================
``official``       upstream          ``'yes'`` anywhere in the reply (LongMemEval's ``evaluate_qa.py``)
``mastra``         upstream          the reply is ``yes`` or starts ``yes.``; anything else is wrong
                                     (Mastra's runner)
``house``          house (ours)      as ``official``
``house_strict``   house (ours)      as ``mastra``: Mastra's parse where the upstream templates are absent
``lenient``        lenient (ours)    as ``official``; the templates give near misses the benefit of the doubt
=================  ================  =====================================================================

Each panel entry is ``<protocol>`` or ``<protocol>:<model>`` (a ``om_eval/configs/model`` name or a litellm id); without
a model it grades with the run's own judge model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from om_eval.bench.judging.judge import Judge, Mode, NoVerdict, ParseRule, judge_model_settings
from om_eval.om.config import ConfigError, ModelSettings

__all__ = ["PROTOCOLS", "PanelEntry", "Protocol", "panel_judge", "parse_panel", "protocol_name"]


@dataclass(frozen=True)
class Protocol:
    """Templates plus verdict rule: what a judge protocol fixes besides the model."""

    name: str
    mode: Mode
    """The template set (``judge.mode``): ``official``, ``house`` or ``lenient``."""
    parse: ParseRule
    """``official`` ('yes' anywhere) or ``mastra`` (exactly yes / yes.)."""
    no_verdict: NoVerdict
    """A reply without a verdict: ``error`` (unjudged) or ``wrong``."""
    summary: str


PROTOCOLS: Mapping[str, Protocol] = {p.name: p for p in (
    Protocol("official", "official", "official", "error", "upstream templates, 'yes' anywhere in the reply"),
    Protocol("mastra", "official", "mastra", "wrong", "upstream templates, reply 'yes' or 'yes.', else wrong"),
    Protocol("house", "house", "official", "error", "house templates, 'yes' anywhere in the reply"),
    Protocol("house_strict", "house", "mastra", "wrong", "house templates, reply 'yes' or 'yes.', else wrong"),
    Protocol("lenient", "lenient", "official", "error", "lenient templates, 'yes' anywhere in the reply"),
)}


@dataclass(frozen=True)
class PanelEntry:
    """One judge of the panel: a protocol and, optionally, its own model."""

    protocol: Protocol
    model: str | None = None
    """A ``om_eval/configs/model`` name or litellm id; ``None``: the run's judge model."""

    @property
    def label(self) -> str:
        return self.protocol.name if self.model is None else f"{self.protocol.name}:{self.model}"


def parse_panel(entries: Sequence[str] | None, *, option: str = "judge.panel") -> list[PanelEntry]:
    """The panel ``judge.panel`` lists, checked.

    Raises:
        ConfigError: naming the option, when the list is empty, an entry names no known protocol, or an entry
            appears twice.
    """
    if not entries:
        raise ConfigError(f"{option} is empty: list protocols such as [official, mastra, house, house_strict, "
                          "lenient] (judge=panel gives all of them)")
    panel: list[PanelEntry] = []
    for entry in entries:
        name, _, model = str(entry).partition(":")
        if name not in PROTOCOLS:
            raise ConfigError(f"{option} entry {entry!r} names no protocol; known: {', '.join(PROTOCOLS)}, each "
                              "optionally followed by :<model>")
        if _ and not model.strip():
            raise ConfigError(f"{option} entry {entry!r} has an empty model after ':'")
        panel.append(PanelEntry(PROTOCOLS[name], model.strip() or None))
    labels = [p.label for p in panel]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ConfigError(f"{option} lists {', '.join(twice)} more than once")
    return panel


def protocol_name(identity: str | Mapping[str, Any]) -> str:
    """The protocol a stored judge identity follows (``mode/parse`` when it is none of :data:`PROTOCOLS`)."""
    data = json.loads(identity) if isinstance(identity, str) else identity
    mode, parse = data.get("mode"), data.get("parse", "official")
    no_verdict = data.get("no_verdict", "error")
    for protocol in PROTOCOLS.values():
        if (protocol.mode, protocol.parse, protocol.no_verdict) == (mode, parse, no_verdict):
            return protocol.name
    suffix = "" if no_verdict == "error" else f", no verdict={no_verdict}"
    return f"{mode}/{parse}{suffix}"


def panel_judge(entry: PanelEntry, model: ModelSettings, source: str | None = None) -> Judge:
    """The judge of one panel entry: its protocol, with its own model or ``model`` (the run's judge model).

    Raises:
        OfficialTemplateError: an upstream-template protocol whose templates cannot be loaded from ``source``
            (or the pinned download).
    """
    settings = judge_model_settings(entry.model) if entry.model is not None else model
    protocol = entry.protocol
    if protocol.mode == "official":
        return Judge.official(source, model=settings, parse=protocol.parse, no_verdict=protocol.no_verdict)
    return Judge(protocol.mode, settings, protocol.parse, None, protocol.no_verdict)
