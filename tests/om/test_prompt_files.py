"""Structural checks on the prompt data files in ``om_eval.om.prompts``.

The texts are our own paraphrase of Mastra's Observational Memory prompts (om-reference §2-§4). These tests pin
what the rendering code relies on: every key present, only the known ``{placeholders}``, no stray braces
(rendering uses ``str.replace``), no section headings (the code adds them), and the size bands that keep each
variant comparable to the original it stands in for.
"""

from __future__ import annotations

import re
import tomllib
from importlib.resources import files

import pytest

from om_eval.om.observer import observer_output_format

PACKAGE = "om_eval.om.prompts"

EXPECTED_KEYS: dict[str, list[str]] = {
    "observer_shared.toml": [
        "identity",
        "extraction_lead",
        "output_format",
        "current_task_hint",
        "suggested_response_hint",
        "thread_title_hint",
        "hint_sections_intro",
        "hint_section_note",
        "thread_title_format",
        "guidelines",
        "thread_attribution",
        "closing",
        "closing_hints",
        "multi_thread_input",
        "multi_thread_output",
        "multi_thread_output_plain",
    ],
    "observer_current.toml": ["extraction", "additions"],
    "observer_current_v1_3.toml": ["extraction_from", "guidelines", "output_format", "multi_thread_output"],
    "observer_legacy.toml": ["extraction"],
    "observer_condensed.toml": ["extraction", "guidelines", "output_format"],
    "observer_request.toml": [
        "previous_observations_heading",
        "previous_observations_note",
        "prior_metadata_heading",
        "prior_metadata_note",
        "truncation_notice",
        "history_heading",
        "multi_history_intro",
        "task_heading",
        "task_single",
        "task_multi",
        "hints_skipped",
    ],
    "reflector.toml": [
        "identity",
        "observer_instructions_intro",
        "role",
        "importance",
        "consolidation",
        "assertions",
        "thread_attribution",
        "output_format",
        "closing",
        "closing_hints",
        "request_heading",
        "request_task",
        "specific_guidance_heading",
        "hints_skipped",
        "prior_values_heading",
        "prior_values_note",
        "additional_sections_heading",
        "compression.level_1",
        "compression.level_2",
        "compression.level_3",
        "compression.level_4",
    ],
    "context.toml": [
        "preamble",
        "use_specifics",
        "knowledge_updates",
        "planned_actions",
        "most_recent_input",
        "system_reminders",
        "other_conversations_intro",
        "continuation_reminder",
        "continuation_reminder_short",
    ],
}

EXPECTED_IDS = {
    "observer_shared.toml": "observer-shared@1",
    "observer_current.toml": "observer-current@1",
    "observer_current_v1_3.toml": "observer-current-v1.3@1",
    "observer_legacy.toml": "observer-legacy@1",
    "observer_condensed.toml": "observer-condensed@1",
    "observer_request.toml": "observer-request@1",
    "reflector.toml": "reflector@1",
    "context.toml": "context@1",
}

# (file, key) -> the placeholders that key must contain; every other key must contain none.
PLACEHOLDERS: dict[tuple[str, str], set[str]] = {
    ("observer_current.toml", "extraction"): {"question_emoji"},
    ("observer_legacy.toml", "extraction"): {"question_emoji"},
    ("observer_condensed.toml", "extraction"): {"question_emoji"},
    ("observer_request.toml", "multi_history_intro"): {"thread_count"},
    ("observer_shared.toml", "hint_section_note"): {"tag"},
}

SECTION_HEADINGS = (
    "=== OUTPUT FORMAT ===",
    "=== GUIDELINES ===",
    "=== THREAD ATTRIBUTION ===",
    "=== IMPORTANT: THREAD ATTRIBUTION ===",
    "=== MULTI-THREAD INPUT ===",
    "=== CUSTOM INSTRUCTIONS ===",
)

# Two phrases the reference quotes from Mastra verbatim; our wording must not reuse them.
MASTRA_PHRASES = (
    "memory consciousness",
    "extract observations that will help the assistant remember",
)

PLACEHOLDER_RE = re.compile(r"\{([^{}]*)\}")


def load(name: str) -> dict:
    return tomllib.loads(files(PACKAGE).joinpath(name).read_text(encoding="utf-8"))


def get(data: dict, dotted: str):
    for part in dotted.split("."):
        data = data[part]
    return data


ALL_TEXTS = [(name, key) for name, keys in EXPECTED_KEYS.items() for key in keys]


def text(name: str, key: str) -> str:
    return get(load(name), key)


@pytest.mark.parametrize("name", sorted(EXPECTED_KEYS))
def test_file_has_id(name: str) -> None:
    assert load(name)["id"] == EXPECTED_IDS[name]


@pytest.mark.parametrize(("name", "key"), ALL_TEXTS)
def test_key_is_non_empty_trimmed_string(name: str, key: str) -> None:
    value = text(name, key)
    assert isinstance(value, str)
    assert value.strip(), f"{name}:{key} is empty"
    assert value == value.strip(), f"{name}:{key} starts or ends with whitespace"


@pytest.mark.parametrize(("name", "key"), ALL_TEXTS)
def test_only_allowed_placeholders(name: str, key: str) -> None:
    value = text(name, key)
    found = set(PLACEHOLDER_RE.findall(value))
    assert found == PLACEHOLDERS.get((name, key), set())
    stripped = PLACEHOLDER_RE.sub("", value)
    assert "{" not in stripped and "}" not in stripped, f"stray brace in {name}:{key}"


@pytest.mark.parametrize(("name", "key"), ALL_TEXTS)
def test_no_section_headings_or_mastra_phrases(name: str, key: str) -> None:
    value = text(name, key)
    for heading in SECTION_HEADINGS:
        assert heading not in value
    for phrase in MASTRA_PHRASES:
        assert phrase not in value.lower()


def test_no_unexpected_keys() -> None:
    for name, keys in EXPECTED_KEYS.items():
        data = load(name)
        top = {k.split(".")[0] for k in keys} | {"id"}
        assert set(data) == top, name


def test_meaning_convention_only_in_current_and_condensed() -> None:
    assert "(meaning" in text("observer_current.toml", "extraction")
    assert "(estimated" in text("observer_current.toml", "extraction")
    assert "(meaning" in text("observer_condensed.toml", "extraction")
    assert "(meaning" in text("observer_condensed.toml", "output_format")
    legacy = text("observer_legacy.toml", "extraction")
    assert "(meaning" not in legacy
    assert "(estimated" not in legacy
    # The shared blocks are rendered with the legacy variant too, so they must stay neutral.
    for name in ("observer_shared.toml", "observer_request.toml", "reflector.toml", "context.toml"):
        for key in EXPECTED_KEYS[name]:
            assert "(meaning" not in text(name, key), f"{name}:{key}"


def test_legacy_lacks_rules_added_later() -> None:
    legacy = text("observer_legacy.toml", "extraction")
    for marker in ("STATE CHANGE", "INTENT", "ACTION VERB", "TWO TIMESTAMPS", "sequences, units", "distinguishes it"):
        assert marker not in legacy, marker


def test_question_emoji_placeholder_marks_questions() -> None:
    for name in ("observer_current.toml", "observer_legacy.toml", "observer_condensed.toml"):
        value = text(name, "extraction")
        assert "{question_emoji} User asked" in value or '"User asked ..." marked {question_emoji}' in value, name


def test_size_bands() -> None:
    current = len(text("observer_current.toml", "extraction")) + len(text("observer_current.toml", "additions"))
    assert 10_000 <= current <= 13_000, current
    legacy = len(text("observer_legacy.toml", "extraction"))
    assert 2_500 <= legacy <= 3_500, legacy
    condensed = len(text("observer_condensed.toml", "extraction"))
    assert 2_300 <= condensed <= 3_000, condensed


def test_output_format_line_counts() -> None:
    shared = observer_output_format().splitlines()  # with its hint blocks, as 1.1-1.10 show it
    assert 35 <= len(shared) <= 50, len(shared)
    condensed = text("observer_condensed.toml", "output_format").splitlines()
    assert 35 <= len(condensed) <= 45, len(condensed)
    example = [line for line in condensed if line.lstrip().startswith("* ")]
    assert 18 <= len(example) <= 24, len(example)
    assert sum(line.startswith("Date: ") for line in condensed) == 2


def test_output_formats_show_all_tags() -> None:
    for name in ("observer_current_v1_3.toml", "observer_condensed.toml", "reflector.toml"):
        fmt = text(name, "output_format")
        for tag in ("observations", "current-task", "suggested-response"):
            assert f"<{tag}>" in fmt and f"</{tag}>" in fmt, (name, tag)
    shared = observer_output_format()
    for tag in ("observations", "current-task", "suggested-response"):
        assert f"<{tag}>" in shared and f"</{tag}>" in shared, tag
    for marker in ("🔴", "🟡", "🟢", "✅", "Date: Mon D, YYYY", "* ->", "Primary:", "Secondary:", "waiting for user"):
        assert marker in shared, marker


def test_guideline_counts() -> None:
    shared = [line for line in text("observer_shared.toml", "guidelines").splitlines() if line.startswith("- ")]
    assert 15 <= len(shared) <= 18, len(shared)
    v1_3 = [line for line in text("observer_current_v1_3.toml", "guidelines").splitlines() if line.startswith("- ")]
    assert len(v1_3) == 10  # "roughly 12 at 1.3, 17 at 1.9+" (om-reference §2.2d), counting example lines
    condensed = [line for line in text("observer_condensed.toml", "guidelines").splitlines() if line.startswith("- ")]
    assert len(condensed) == 9


@pytest.mark.parametrize("name", ["observer_shared.toml", "observer_current_v1_3.toml"])
def test_multi_thread_output_example_has_two_threads(name: str) -> None:
    out = text(name, "multi_thread_output")
    assert len(re.findall(r'<thread id="(?!\.\.\.)[^"]+">', out)) == 2
    assert out.count("</thread>") == 2
    lines = out.splitlines()
    assert lines.count("<current-task>") == 2 and lines.count("<suggested-response>") == 2


def test_current_v1_3_is_current_before_1_9() -> None:
    """The 1.3 pieces: current's rules without the 1.9+ additions, three priority markers, no ✅ anywhere."""
    data = load("observer_current_v1_3.toml")
    base = load(data["extraction_from"] + ".toml")
    assert set(base) >= {"extraction", "additions"}  # the 1.3 rules, and the 1.9+ ones left out
    for key in EXPECTED_KEYS["observer_current_v1_3.toml"]:
        assert "✅" not in data[key], key
    for key in ("output_format", "multi_thread_output"):
        legend = [line for line in data[key].splitlines() if re.match(r"- (🔴|🟡|🟢) ", line)]
        assert [line[2] for line in legend] == ["🔴", "🟡", "🟢"], key
        assert "goals the user has reached" in legend[0], key  # 1.3 read "achieved", 1.9 "unresolved"
    # The 1.3 guidelines are the shared (1.10) ones without the 1.9+ bullets; only the marker bullet differs.
    shared = text("observer_shared.toml", "guidelines").splitlines()
    only_1_3 = [line for line in data["guidelines"].splitlines() if line not in shared]
    assert only_1_3 == ["- Begin every line with a priority emoji: 🔴, 🟡 or 🟢."]


def test_compression_levels() -> None:
    compression = load("reflector.toml")["compression"]
    assert set(compression) == {"level_1", "level_2", "level_3", "level_4"}
    headings = {
        "level_1": ("COMPRESSION REQUIRED", "8/10"),
        "level_2": ("AGGRESSIVE COMPRESSION REQUIRED", "6/10"),
        "level_3": ("CRITICAL COMPRESSION REQUIRED", "4/10"),
        "level_4": ("EXTREME COMPRESSION REQUIRED", "2/10"),
    }
    for key, (heading, target) in headings.items():
        value = compression[key]
        assert value.splitlines()[0] == heading
        assert target in value


def test_reflector_thread_example_hoists_shared_fact() -> None:
    block = text("reflector.toml", "thread_attribution")
    example_in, example_out = block.split("Example output:")
    fact = "User stated they are vegetarian."
    assert example_in.count(fact) == 2
    assert example_out.count(fact) == 1
    assert example_out.index(fact) < example_out.index("<thread id=")
