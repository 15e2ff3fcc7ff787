"""The Reflector: condenses observations, escalating compression until they fit (om-reference §3).

Departures from 1.10, each fixing a failure reported against it (lessons-from-peers §4):

* the ladder keeps the *smallest* non-degenerate attempt rather than the last one (mastra#15062);
* an all-degenerate ladder raises instead of writing an empty memory (mastra PR#22074);
* a result that is empty or no smaller than its input is reported as unproductive and is never applied;
* an attempt that is not observations is a failed attempt, like a degenerate one, and is never applied: either
  it has no observation lines although its input had some (prose, an apology, a stray summary), or it shrank
  memory below :data:`MIN_KEPT_SHARE` of what it was asked to fit in (see there). Upstream would have replaced
  a whole memory with such a reply;
* when the input is observations, an attempt without a complete ``<observations>`` block is a failed attempt
  too. Such a reply was cut off by an output limit (the block never closes) or ignored the format, and the
  parser's list-line fallback keeps only its bullets: applied, it would silently strip every ``Date:`` header
  and ``<thread>`` block from the whole memory (the reliability suite caught a 402-token memory replaced by a
  184-token one with no dates left);
* the model is told which replies are unusable (:func:`~om_eval.om.model.complete_checked`), so a caching model
  never stores one and a re-run asks again;
* the ladder is bounded (at most four levels above the start), and the engine backs off after a reflection
  that stayed above its target, so observations that cannot be compressed never cause a reflect-loop
  (mastra#14109).
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from om_eval.om.anchors import inject_anchor_ids
from om_eval.om.config import MAX_COMPRESSION_LEVEL, ModelSettings, ReplyChecks
from om_eval.om.js.text import js_trim
from om_eval.om.model import ChatModel, ModelReply, complete_checked
from om_eval.om.observer import (
    extraction_instructions,
    hint_sections_text,
    observer_guidelines,
    observer_output_format,
)
from om_eval.om.parsing import (
    CONTINUATION_HINT_TAGS,
    READING_1_10,
    ReflectorOutput,
    ReplyReading,
    has_observation_lines,
    has_observations_block,
)
from om_eval.om.prompts import load_prompts
from om_eval.om.tokens import TokenCounter


class ReflectorWording(Protocol):
    """What the ladder asks of a wording (:class:`om_eval.om.wording.Wording` has it): the prompts and the levels."""

    @property
    def max_compression_level(self) -> int: ...

    def reflector_system_prompt(self, variant: str, instruction: str | None = None,
                                hint_tags: Sequence[str] | None = None) -> str: ...

    def reflector_request(self, observations: str, level: int, *, guidance: str | None = None,
                          skip_continuation_hints: bool = False, anchor_ids: bool = True,
                          hint_tags: Sequence[str] = (), prior_hints: Mapping[str, str] | None = None) -> str: ...


class OwnWords:
    """om-eval's own words for the Reflector (``prompts/reflector.toml``): the ladder's default wording."""

    max_compression_level = MAX_COMPRESSION_LEVEL

    def reflector_system_prompt(self, variant: str, instruction: str | None = None,
                                hint_tags: Sequence[str] | None = None) -> str:
        return render_reflector_system_prompt(variant, instruction, hint_tags)

    def reflector_request(self, observations: str, level: int, *, guidance: str | None = None,
                          skip_continuation_hints: bool = False, anchor_ids: bool = True,
                          hint_tags: Sequence[str] = (), prior_hints: Mapping[str, str] | None = None) -> str:
        return render_reflector_request(observations, level, guidance=guidance,
                                        skip_continuation_hints=skip_continuation_hints, anchor_ids=anchor_ids,
                                        hint_tags=hint_tags, prior_hints=prior_hints)

_BLANK_RUNS = re.compile(r"\n{3,}")
#: Extra levels the ladder may climb above its start level.
LADDER_HEIGHT = 3
MIN_KEPT_SHARE = 0.05
"""The smallest believable reflection, as a share of ``min(input tokens, target)``.

Why 5 %: the harshest rung (level 4) asks for "a level of detail around 2/10" of the input, and a reflection only
has to fit under its target. A reply under a quarter of that most aggressive request, i.e. under a twentieth of
the memory it replaces (or of the budget it had to fit, when that is smaller), has not condensed the memory but
lost it: a model that answered with a one-line summary or a refusal. Such an attempt fails and memory is kept.
"""


def min_reflection_tokens(input_tokens: int, target: int) -> int:
    """Fewest tokens an acceptable reflection may have (at least 1; see :data:`MIN_KEPT_SHARE`)."""
    return max(1, math.ceil(MIN_KEPT_SHARE * min(input_tokens, target)))


class ReflectionError(RuntimeError):
    """Every attempt of the ladder failed (degenerate, empty, not observations, too small); memory unchanged.

    ``attempts`` are the failed rungs, so the calls they cost can be accounted for.
    """

    def __init__(self, message: str, attempts: Sequence[ReflectionAttempt] = ()) -> None:
        super().__init__(message)
        self.attempts = tuple(attempts)


def compression_guidance(level: int) -> str:
    """The guidance appended at ``level`` (0 = none, 4 = extreme)."""
    if not 0 <= level <= MAX_COMPRESSION_LEVEL:
        raise ValueError(f"compression level {level!r} is invalid: allowed 0-{MAX_COMPRESSION_LEVEL}")
    if level == 0:
        return ""
    return str(load_prompts("reflector")["compression"][f"level_{level}"])


def render_reflector_system_prompt(
    variant: str, instruction: str | None = None, hint_tags: Sequence[str] | None = None
) -> str:
    """The Reflector's system prompt, embedding the active Observer variant's instructions (§3.1).

    With ``hint_tags`` (``mastra_release=v1_31``) the Observer's format in it asks for the hints as 1.27+'s optional
    sections (none for a call that asks for no hints), and the closing format section repeats that whole format
    where 1.10 describes the reflection's own.
    """
    texts = load_prompts("reflector")
    shared = load_prompts("observer_shared")
    observer_format = observer_output_format(hint_tags=hint_tags)
    observer_block = "\n\n".join(
        [
            shared["extraction_lead"],
            extraction_instructions(variant),
            "=== OUTPUT FORMAT ===",
            observer_format,
            "=== GUIDELINES ===",
            observer_guidelines(variant),
        ]
    )
    hinted = hint_tags is None or bool(set(hint_tags) & set(CONTINUATION_HINT_TAGS))
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
        texts["output_format"] if hint_tags is None else observer_format,
        texts["closing"] + (" " + texts["closing_hints"] if hinted else ""),
    ]
    if instruction and instruction.strip():
        sections += ["=== CUSTOM INSTRUCTIONS ===", instruction.strip()]
    return "\n\n".join(sections)


def render_reflector_request(
    observations: str,
    level: int,
    *,
    guidance: str | None = None,
    skip_continuation_hints: bool = False,
    anchor_ids: bool = True,
    hint_tags: Sequence[str] = (),
    prior_hints: Mapping[str, str] | None = None,
) -> str:
    """The user message: the observations (anchored, as 1.9-1.10 show them; or, with ``anchor_ids=False``, as 1.12+
    do: blank-line runs squeezed, trimmed), the task, optional guidance, the level's compression text.

    1.27+ (``hint_tags``) adds the thread's hints so far (``prior_hints``, by tag) and the optional sections.
    """
    texts = load_prompts("reflector")
    shown = inject_anchor_ids(observations) if anchor_ids else js_trim(_BLANK_RUNS.sub("\n\n", observations))
    sections = [texts["request_heading"], shown, "---", texts["request_task"]]
    if guidance and guidance.strip():
        sections += [texts["specific_guidance_heading"], guidance.strip()]
    if level:
        sections.append(compression_guidance(level))
    hints = prior_hints or {}
    prior = [f"<{tag}>\n{hints[tag]}\n</{tag}>" for tag in hint_tags if hints.get(tag)]
    if prior:
        sections += [texts["prior_values_heading"], "\n\n".join(prior), texts["prior_values_note"]]
    if hint_tags:
        sections += [texts["additional_sections_heading"], hint_sections_text(hint_tags)]
    if skip_continuation_hints:
        sections.append(texts["hints_skipped"])
    return "\n\n".join(sections)


@dataclass(frozen=True)
class ReflectionAttempt:
    """One rung of the ladder."""

    level: int
    tokens: int | None
    """Observation tokens of the parsed answer; ``None`` when degenerate or empty."""
    degenerate: bool
    """The repetition detector fired."""
    reply: ModelReply
    problem: str | None = None
    """Why the attempt failed (degenerate, empty, not observations, too small); ``None`` when usable."""

    @property
    def usable(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class _Checked:
    """What one Reflector answer holds, and what is wrong with it (``problem`` is ``None`` when usable)."""

    problem: str | None
    degenerate: bool = False
    tokens: int | None = None
    output: ReflectorOutput = field(default_factory=lambda: ReflectorOutput(""))


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
    current_task: str | None = None
    """Read only with 1.27+'s hint sections; 1.31 keeps it for the thread."""

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
    checks: ReplyChecks = "om_eval",
    reading: ReplyReading = READING_1_10,
    anchor_ids: bool = True,
    empty_fails: bool = False,
    hint_tags: Sequence[str] | None = None,
    prior_hints: Mapping[str, str] | None = None,
    wording: ReflectorWording | None = None,
) -> ReflectionResult:
    """Run the compression ladder from ``start_level`` until an attempt is below ``target`` (§3.5).

    An attempt fails, and the ladder moves on, when its answer is degenerate, empty, has no observation lines
    although ``observations`` has some, or has fewer than :func:`min_reflection_tokens` tokens. With
    ``checks="mastra"`` only a degenerate answer fails (and an empty one, with ``empty_fails``, as in 1.31), and the
    last attempt is the result (see :func:`_ladder_as_mastra`). ``reading`` is the repetition-loop detector and hint
    rule the replies are read with;
    ``anchor_ids`` shows the observations with anchor ids (1.9-1.10) or without (1.12+); ``hint_tags`` and
    ``prior_hints`` ask for the hints as 1.27+ does (:func:`render_reflector_request`). ``wording`` renders the
    prompts (default om-eval's own, :class:`OwnWords`; a Mastra release's: :mod:`om_eval.om.wording`); its highest
    compression level caps the ladder.

    Raises:
        ReflectionError: every attempt failed (never with ``checks="mastra"``).
    """
    wording = wording or OwnWords()
    input_tokens = counter.count_text(observations)
    system_prompt = wording.reflector_system_prompt(variant, instruction, hint_tags)
    top = min(MAX_COMPRESSION_LEVEL, wording.max_compression_level)
    if start_level > top:
        raise ValueError(f"compression level {start_level} is invalid: these prompts have levels 0-{top}")
    max_level = min(top, start_level + LADDER_HEIGHT)

    def ask(level: int, check: Callable[[str], str | None]) -> Awaitable[ModelReply]:
        request = wording.reflector_request(
            observations, level, guidance=guidance, skip_continuation_hints=skip_continuation_hints,
            anchor_ids=anchor_ids, hint_tags=hint_tags or (), prior_hints=prior_hints,
        )
        messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": request}]
        # Each rung is a different request, so every rung is its own cache entry without an attempt number.
        return complete_checked(model, messages, stage="reflector", settings=settings, check=check)

    if checks == "mastra":
        return await _ladder_as_mastra(ask, input_tokens, target, range(start_level, max_level + 1), counter,
                                       reading=reading, empty_fails=empty_fails and bool(observations.strip()))
    floor = min_reflection_tokens(input_tokens, target)
    structured = has_observation_lines(observations)
    attempts: list[ReflectionAttempt] = []
    best: tuple[int, int, ReflectorOutput] | None = None  # tokens, level, answer

    def check(raw: str) -> _Checked:
        """One answer, parsed and checked."""
        parsed = reading.reflector(raw)
        if parsed.degenerate:
            return _Checked("degenerate (repetition loop)", degenerate=True)
        if not parsed.observations.strip():
            return _Checked("empty reflection")
        tokens = counter.count_text(parsed.observations)
        problem = None
        if structured and not has_observation_lines(parsed.observations):
            problem = "not observations (no line opens with a 🔴/🟡/🟢/✅ marker)"
        elif structured and not has_observations_block(raw):
            problem = "no complete <observations> block (cut off, or untagged: its dates and threads would be lost)"
        elif tokens < floor:
            problem = f"{tokens} tokens, below the floor of {floor} for {input_tokens} tokens in (target {target})"
        return _Checked(problem, tokens=tokens, output=parsed)

    for level in range(start_level, max_level + 1):
        reply = await ask(level, lambda raw: check(raw).problem)
        checked = check(reply.text)
        attempts.append(ReflectionAttempt(level, checked.tokens, checked.degenerate, reply, checked.problem))
        if checked.problem is not None or checked.tokens is None:
            continue
        tokens = checked.tokens
        if best is None or tokens < best[0]:
            best = (tokens, level, checked.output)
        if tokens < target:
            break

    if best is None:
        reasons = "; ".join(f"level {a.level}: {a.problem}" for a in attempts)
        raise ReflectionError(
            f"the reflector ({settings.model}) gave no usable reflection at any level {start_level}-{max_level} "
            f"({reasons}); the observations were kept unchanged",
            attempts,
        )
    tokens, level, output = best
    return ReflectionResult(output.observations, tokens, input_tokens, target, level, output.suggested_response,
                            tuple(attempts), output.current_task)


async def _ladder_as_mastra(
    ask: Callable[[int, Callable[[str], str | None]], Awaitable[ModelReply]],
    input_tokens: int,
    target: int,
    levels: Sequence[int],
    counter: TokenCounter,
    *,
    reading: ReplyReading,
    empty_fails: bool,
) -> ReflectionResult:
    """1.10's ladder: stop at the first non-degenerate attempt under ``target``; the last attempt is the result,
    even above its target, and a degenerate last attempt leaves no observations at all. With ``empty_fails``
    (1.31, for a non-empty input) an empty attempt fails like a degenerate one, and a ladder that ends with
    no observations raises :class:`ReflectionError` instead of emptying the memory."""

    def failure(parsed: ReflectorOutput) -> str | None:
        if parsed.degenerate:
            return "degenerate (repetition loop)"
        return "empty reflection" if empty_fails and not parsed.observations.strip() else None

    attempts: list[ReflectionAttempt] = []
    output, tokens = ReflectorOutput(""), 0
    for level in levels:
        reply = await ask(level, lambda raw: failure(reading.reflector(raw)))
        parsed = reading.reflector(reply.text)
        if (problem := failure(parsed)) is not None:
            output, tokens = ReflectorOutput(""), 0
            attempts.append(ReflectionAttempt(level, None, parsed.degenerate, reply, problem))
            continue
        output, tokens = parsed, counter.count_text(parsed.observations)
        attempts.append(ReflectionAttempt(level, tokens, False, reply))
        if tokens < target:
            break
    if empty_fails and not output.observations.strip():
        reasons = "; ".join(f"level {a.level}: {a.problem}" for a in attempts)
        raise ReflectionError(f"every reflection attempt failed ({reasons}); the observations were kept unchanged",
                              attempts)
    return ReflectionResult(output.observations, tokens, input_tokens, target, attempts[-1].level,
                            output.suggested_response, tuple(attempts), output.current_task)


def attempt_levels(result: ReflectionResult) -> Sequence[int]:
    """The levels the ladder visited, in order."""
    return [a.level for a in result.attempts]
