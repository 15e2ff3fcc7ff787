"""The Reflector: condenses observations, escalating compression until they fit (om-reference §3).

Departures from 1.10, each fixing a failure reported against it (lessons-from-peers §4):

* the ladder keeps the *smallest* non-degenerate attempt rather than the last one (mastra#15062);
* an all-degenerate ladder raises instead of writing an empty memory (mastra PR#22074);
* a result that is empty or no smaller than its input is reported as unproductive and is never applied;
* the ladder is bounded (at most four levels above the start), and the engine backs off after a reflection
  that stayed above its target, so observations that cannot be compressed never cause a reflect-loop
  (mastra#14109).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from om_eval.om.anchors import inject_anchor_ids
from om_eval.om.config import MAX_COMPRESSION_LEVEL, ModelSettings
from om_eval.om.model import ChatModel, ModelReply
from om_eval.om.observer import extraction_instructions, observer_guidelines
from om_eval.om.parsing import parse_reflector_output
from om_eval.om.prompts import load_prompts
from om_eval.om.tokens import TokenCounter

#: Extra levels the ladder may climb above its start level.
LADDER_HEIGHT = 3


class ReflectionError(RuntimeError):
    """Every attempt of the ladder was degenerate or empty; memory was left unchanged."""


def compression_guidance(level: int) -> str:
    """The guidance appended at ``level`` (0 = none, 4 = extreme)."""
    if not 0 <= level <= MAX_COMPRESSION_LEVEL:
        raise ValueError(f"compression level {level!r} is invalid: allowed 0-{MAX_COMPRESSION_LEVEL}")
    if level == 0:
        return ""
    return load_prompts("reflector")["compression"][f"level_{level}"]


def render_reflector_system_prompt(variant: str, instruction: str | None = None) -> str:
    """The Reflector's system prompt, embedding the active Observer variant's instructions (§3.1)."""
    texts = load_prompts("reflector")
    shared = load_prompts("observer_shared")
    observer_block = "\n\n".join(
        [
            shared["extraction_lead"],
            extraction_instructions(variant),
            "=== OUTPUT FORMAT ===",
            shared["output_format"],
            "=== GUIDELINES ===",
            observer_guidelines(variant),
        ]
    )
    sections = [
        texts["identity"],
        texts["observer_instructions_intro"],
        f"<observational-memory-instruction>\n{observer_block}\n</observational-memory-instruction>",
        texts["role"],
        texts["importance"],
        texts["consolidation"],
        texts["assertions"],
        texts["thread_attribution"],
        "=== OUTPUT FORMAT ===",
        texts["output_format"],
        texts["closing"],
    ]
    if instruction and instruction.strip():
        sections += ["=== CUSTOM INSTRUCTIONS ===", instruction.strip()]
    return "\n\n".join(sections)


def render_reflector_request(
    observations: str, level: int, *, guidance: str | None = None, skip_continuation_hints: bool = False
) -> str:
    """The user message: anchored observations, the task, optional guidance, the level's compression text."""
    texts = load_prompts("reflector")
    sections = [texts["request_heading"], inject_anchor_ids(observations), "---", texts["request_task"]]
    if guidance and guidance.strip():
        sections += [texts["specific_guidance_heading"], guidance.strip()]
    if level:
        sections.append(compression_guidance(level))
    if skip_continuation_hints:
        sections.append(texts["hints_skipped"])
    return "\n\n".join(sections)


@dataclass(frozen=True)
class ReflectionAttempt:
    """One rung of the ladder."""

    level: int
    tokens: int | None
    """Observation tokens of the parsed answer; ``None`` when degenerate."""
    degenerate: bool
    reply: ModelReply


@dataclass(frozen=True)
class ReflectionResult:
    """The outcome of a ladder. ``observations`` is the smallest non-degenerate attempt."""

    observations: str
    tokens: int
    input_tokens: int
    target: int
    level: int
    suggested_response: str | None
    attempts: tuple[ReflectionAttempt, ...]

    @property
    def below_target(self) -> bool:
        return self.tokens < self.target

    @property
    def productive(self) -> bool:
        """Non-empty and smaller than its input: safe to replace memory with."""
        return bool(self.observations.strip()) and self.tokens < self.input_tokens


async def reflect_observations(
    model: ChatModel,
    settings: ModelSettings,
    observations: str,
    *,
    target: int,
    start_level: int,
    counter: TokenCounter,
    variant: str = "current",
    instruction: str | None = None,
    guidance: str | None = None,
    skip_continuation_hints: bool = False,
) -> ReflectionResult:
    """Run the compression ladder from ``start_level`` until an attempt is below ``target`` (§3.5).

    Raises:
        ReflectionError: every attempt was degenerate or empty.
    """
    input_tokens = counter.count_text(observations)
    system_prompt = render_reflector_system_prompt(variant, instruction)
    max_level = min(MAX_COMPRESSION_LEVEL, start_level + LADDER_HEIGHT)
    attempts: list[ReflectionAttempt] = []
    best: tuple[int, int, str, str | None] | None = None  # tokens, level, text, suggested response

    for level in range(start_level, max_level + 1):
        request = render_reflector_request(
            observations, level, guidance=guidance, skip_continuation_hints=skip_continuation_hints
        )
        messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": request}]
        reply = await model.complete(messages, stage="reflector", settings=settings)
        parsed = parse_reflector_output(reply.text)
        if parsed.degenerate or not parsed.observations.strip():
            attempts.append(ReflectionAttempt(level, None, True, reply))
            continue
        tokens = counter.count_text(parsed.observations)
        attempts.append(ReflectionAttempt(level, tokens, False, reply))
        if best is None or tokens < best[0]:
            best = (tokens, level, parsed.observations, parsed.suggested_response)
        if tokens < target:
            break

    if best is None:
        raise ReflectionError(
            f"the reflector ({settings.model}) gave degenerate or empty output at every level "
            f"{start_level}-{max_level}; the observations were kept unchanged"
        )
    tokens, level, text, suggested = best
    return ReflectionResult(text, tokens, input_tokens, target, level, suggested, tuple(attempts))


def attempt_levels(result: ReflectionResult) -> Sequence[int]:
    """The levels the ladder visited, in order."""
    return [a.level for a in result.attempts]
