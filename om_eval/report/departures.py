"""How a run differs from the harness behind Mastra's published LongMemEval scores (om-reference §6).

Why a report line: the published 84.23 was made with choices om-eval does not default to (the original data file,
an undated judge, a stricter yes-rule, re-asks of flagged questions, a content rewriter) and om-eval adds rules of
its own that Mastra's engine does not have. A number compared with Mastra's should say which of these were on.
Only runs of a ``mastra*`` experiment get the line; the conditions are read from the stored, resolved config.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from om_eval.om.rules import release_rules

#: Why a run that reads om-eval's paraphrase is not Mastra's, in the report's words.
PARAPHRASE_REASON = "prompts are om-eval's paraphrase, not Mastra's text"

#: What om-eval never reproduces, so every Mastra-like run carries it.
ALWAYS = (
    "no re-asks of questions Mastra flagged for retry",
    "no rewriter of content the observer model refuses",
)


def mastra_departures(config: Mapping[str, Any]) -> list[str]:
    """The departures from Mastra's harness of a run with resolved ``config`` (see the module docstring)."""
    found = []
    dataset = config.get("dataset") or {}
    if dataset.get("name") != "s_original":
        found.append(f"data {dataset.get('name') or '?'} (Mastra: the original longmemeval_s)")
    judge = config.get("judge") or {}
    model = (config.get("models") or {}).get("judge") or {}
    if judge.get("mode") != "official":
        found.append(f"{judge.get('mode') or '?'} judge templates (Mastra: the official ones)")
    if model.get("model") != "openai/gpt-4o":
        found.append(f"judge model {model.get('model') or '?'} (Mastra: undated openai/gpt-4o)")
    if model.get("max_output_tokens") is not None:
        found.append(f"judge output capped at {model['max_output_tokens']} tokens (Mastra: no cap)")
    if judge.get("parse") != "mastra":
        found.append("yes anywhere in the reply counts (Mastra: the reply is exactly yes or starts with 'yes.')")
    if judge.get("no_verdict", "error") != "wrong":
        found.append("a reply without a verdict is unjudged (Mastra: wrong)")
    replay = (config.get("om") or {}).get("replay") or {}
    # The published runs came from the dev code; a 1.31 engine is compared with the package.
    expected, source = release_rules((config.get("om") or {}).get("mastra_release") or "v1_10").reference_accounting
    if replay.get("pending_accounting", "exact") != expected:
        found.append(f"pending tokens counted as {replay.get('pending_accounting', 'exact')} ({source}: {expected})")
    if (config.get("om") or {}).get("reply_checks", "om_eval") != "mastra":
        found.append("om-eval's observer/reflector robustness rules (repeat check, smallest reflection kept, junk "
                     "never applied; Mastra: om.reply_checks=mastra)")
    if (config.get("om") or {}).get("thread_sections", "om_eval") != "mastra":
        found.append("thread sections merged by om-eval's rule (Mastra: om.thread_sections=mastra)")
    found += _prompt_departures(config)
    return [*found, *ALWAYS]


def _prompt_departures(config: Mapping[str, Any]) -> list[str]:
    """Whose words the models read: Mastra's published runs read @mastra/memory's own (1.3.0's; a 1.31 engine is
    compared with 1.31.0's), om-eval's paraphrase is not their text."""
    prompt = config.get("prompt")
    if prompt is None:  # a baseline reader or another memory system: no OM prompts
        return []
    wanted = "1.31.0" if (config.get("om") or {}).get("mastra_release") == "v1_31" else "1.3.0"
    if prompt.get("variant") != "mastra_exact":
        return [f"{PARAPHRASE_REASON} (Mastra: @mastra/memory {wanted}'s own; prompt=mastra_exact)"]
    if prompt.get("mastra_version") != wanted:
        return [f"@mastra/memory {prompt.get('mastra_version')}'s prompts (Mastra: {wanted}'s)"]
    return []


def departure_notes(runs: Iterable[Mapping[str, Any]]) -> list[str]:
    """One note per run of a ``mastra*`` experiment, naming its departures."""
    notes = []
    for run in runs:
        config = run.get("config_json")
        config = json.loads(config) if isinstance(config, str) else (config or {})
        if not str(config.get("experiment") or "").startswith("mastra"):
            continue
        label = run.get("label") or run["run_id"][:8]
        notes.append(f"Departures from Mastra's harness ({label}): " + "; ".join(mastra_departures(config)) + ".")
    return notes
