"""The judge: official-template loading (against an invented stand-in), house templates, parsing, cache scope.

No upstream template text appears here. The stand-in module below has upstream's layout (imports of openai,
backoff, tqdm and numpy at the top, a CLI under ``__main__``) and ``get_anscheck_prompt``'s signature and
routing, with invented wording.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from om_eval.bench.judging import official_templates as judge_module
from om_eval.bench.judging.judge import (
    HOUSE_TEMPLATES,
    HOUSE_TEMPLATES_SHA256,
    OFFICIAL_JUDGE_SETTINGS,
    PINNED_SHA256,
    Judge,
    JudgeResult,
    OfficialTemplateError,
    TemplateHashMismatch,
    house_prompt,
    house_template_name,
    judge_answer,
    judge_many,
    load_official_prompt_builder,
    load_official_templates,
    parse_label,
    parse_verdict,
)
from om_eval.bench.judging.official_templates import RAW_URL
from om_eval.data.records import QUESTION_TYPES, Question
from om_eval.llm.cache import ResponseCache
from om_eval.llm.client import ClientSettings, LLMClient
from om_eval.llm.models import model_settings
from om_eval.llm.providers import register_scripted
from om_eval.llm.request import LLMRequest
from om_eval.om.config import ConfigError
from om_eval.om.model import ModelReply
from om_eval.testing.scripted.model import ScriptedModel

ROOT = Path(__file__).resolve().parents[3]

# ------------------------------------------------------------------------------------------- the stand-in

# An invented stand-in for the upstream file: same function name and signature, our own layout and text. Its top
# imports the four packages the real file imports, so tests can prove the loader never imports them.
STANDIN_FUNCTION = '''
def get_anscheck_prompt(task, question, answer, response, abstention=False):
    slots = "\\n\\nQ: {}\\n\\nGOLD: {}\\n\\nCANDIDATE: {}\\n\\nVerdict? yes or no."
    rules = {
        "single-session-user": "STAND-IN plain rule: a grader compares the candidate with the gold text. ",
        "single-session-assistant": "STAND-IN plain rule: a grader compares the candidate with the gold text. ",
        "multi-session": "STAND-IN plain rule: a grader compares the candidate with the gold text. ",
        "temporal-reasoning": "STAND-IN time rule: off-by-one weekdays are forgiven (caf\\u00e9 \\u23f0). ",
        "knowledge-update": "STAND-IN update rule: the newest value wins.",
    }
    if abstention:
        layout = ("STAND-IN refusal rule: a good candidate declines.\\n\\nQ: {}\\n\\nNOTE: {}\\n\\nCANDIDATE: {}"
                  "\\n\\nDeclined? yes or no.")
    elif task == "single-session-preference":
        layout = "STAND-IN taste rule: judged against a checklist." + slots.replace("GOLD", "CHECKLIST")
    elif task in rules:
        layout = rules[task] + slots
    else:
        raise NotImplementedError
    return layout.format(question, answer, response)
'''


STANDIN_HEADER = """\
import openai
import backoff
import numpy
import tqdm
"""
STANDIN_MIDDLE = """

GRADER_NOTES = "module-level state the loader must never evaluate"

"""
STANDIN_FOOTER = """

if __name__ == "__main__":
    print(numpy.mean([1, 0]), GRADER_NOTES)
"""


def standin_source(function: str = STANDIN_FUNCTION, *, top: str = "", comment: str = "") -> str:
    """An evaluate_qa.py look-alike: ``top`` runs at module level, ``comment`` changes the bytes only."""
    return STANDIN_HEADER + top + f"\n# {comment}\n" + STANDIN_MIDDLE + function + STANDIN_FOOTER


def write_standin(directory: Path, text: str | None = None, name: str = "evaluate_qa.py") -> tuple[Path, str]:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text if text is not None else standin_source(), encoding="utf-8")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


FAKE_DEPENDENCIES = {
    "openai.py": "class RateLimitError(Exception): pass\nclass APIError(Exception): pass\n"
                 "class OpenAI:\n    def __init__(self, **kwargs): pass\n",
    "backoff.py": "def expo(*a, **k): pass\ndef on_exception(*a, **k):\n    return lambda f: f\n",
    "tqdm.py": "def tqdm(x, *a, **k): return x\n",
    "numpy.py": "def mean(x): return sum(x) / len(x)\n",
}

CASES: list[tuple[Any, ...]] = [
    *[(t, "Where did I park {the car}?", "Level 3, spot B", "You parked on level 3 (spot B).", False)
      for t in QUESTION_TYPES],
    ("multi-session", "How many plants did I buy?", 3, "Three plants.", False),
    ("temporal-reasoning", "How many days ago?", 18, "19 days\nroughly", False),
    ("single-session-user", "What is my cat's name? 🐈", "You never said.", "I don't know.", True),
    ("knowledge-update", "q", "a", "r"),
]


def reference_outputs(module_path: Path, tmp_path: Path, cases: list[tuple[Any, ...]]) -> list[str]:
    """The stand-in's own function, imported in a clean interpreter with fake openai/backoff/tqdm/numpy."""
    fakes = tmp_path / "fake_dependencies"
    fakes.mkdir(exist_ok=True)
    for name, text in FAKE_DEPENDENCIES.items():
        (fakes / name).write_text(text, encoding="utf-8")
    script = textwrap.dedent(f"""
        import importlib.util, json, sys
        sys.path[:0] = [{str(fakes)!r}]
        spec = importlib.util.spec_from_file_location("standin_module", {str(module_path)!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        cases = json.loads(sys.stdin.read())
        sys.stdout.write(json.dumps([module.get_anscheck_prompt(*case) for case in cases]))
    """)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", script], input=json.dumps(cases),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


# --------------------------------------------------------------------------------------- loading and parity


def test_loaded_builder_is_byte_identical_to_the_modules_own_function(tmp_path: Path) -> None:
    path, sha = write_standin(tmp_path / "file")
    builder = load_official_prompt_builder(path, expected_sha256=sha)
    expected = reference_outputs(path, tmp_path, CASES)
    ours = [builder(*case) for case in CASES]
    assert [p.encode("utf-8") for p in ours] == [p.encode("utf-8") for p in expected]
    assert "GOLD: 3\n" in ours[len(QUESTION_TYPES)]  # an int answer formats as str.format does
    assert ours[-2].startswith("STAND-IN refusal rule")  # abstention routes whatever the type
    with pytest.raises(NotImplementedError):
        builder("unknown-type", "q", "a", "r")


def test_templates_carry_their_identity_and_accept_any_version_only_when_asked(tmp_path: Path) -> None:
    path, sha = write_standin(tmp_path)
    templates = load_official_templates(path, expected_sha256=None)
    assert templates.sha256 == sha and templates.source == str(path) and not templates.pinned
    assert templates("multi-session", "q", "a", "r") == templates.builder("multi-session", "q", "a", "r")


def test_a_file_whose_sha256_differs_from_the_pinned_one_is_refused(tmp_path: Path) -> None:
    path, sha = write_standin(tmp_path)
    with pytest.raises(TemplateHashMismatch) as error:
        load_official_prompt_builder(path)
    message = str(error.value)
    assert str(path) in message and PINNED_SHA256 in message and sha in message
    assert (error.value.expected, error.value.actual) == (PINNED_SHA256, sha)
    with pytest.raises(TemplateHashMismatch):
        load_official_prompt_builder(path, expected_sha256="0" * 64)


def test_a_local_clone_layout_is_read_from_src_evaluation(tmp_path: Path) -> None:
    clone = tmp_path / "LongMemEval"
    _path, sha = write_standin(clone / "src" / "evaluation")
    builder = load_official_prompt_builder(clone, expected_sha256=sha)
    assert builder("knowledge-update", "q", "a", "r").startswith("STAND-IN update rule")
    with pytest.raises(OfficialTemplateError, match="does not exist"):
        load_official_prompt_builder(tmp_path / "nowhere")
    (tmp_path / "not_a_clone").mkdir()
    with pytest.raises(OfficialTemplateError, match="without src/evaluation/evaluate_qa.py"):
        load_official_prompt_builder(tmp_path / "not_a_clone")


def test_module_top_level_never_runs_and_its_imports_never_happen(tmp_path: Path) -> None:
    marker = tmp_path / "top-level-ran"
    top = (f"import om_eval_tripwire_module\nopen({str(marker)!r}, 'w').write('ran')\n"
           "raise SystemExit('the module top level must not run')")
    path, sha = write_standin(tmp_path / "malicious", standin_source(top=top))
    builder = load_official_prompt_builder(path, expected_sha256=sha)
    assert builder("multi-session", "q", "a", "r").startswith("STAND-IN plain rule")
    assert not marker.exists()
    assert "om_eval_tripwire_module" not in sys.modules
    assert builder.__globals__["__builtins__"].keys() == judge_module.SAFE_BUILTINS.keys()
    assert set(builder.__globals__) == {"__builtins__", "get_anscheck_prompt"}


def test_the_loader_imports_none_of_the_upstream_dependencies(tmp_path: Path) -> None:
    """In a fresh interpreter where importing openai/backoff/tqdm/numpy would leave a marker and fail."""
    tripwires = tmp_path / "tripwires"
    tripwires.mkdir()
    for name in ("openai", "backoff", "tqdm", "numpy"):
        (tripwires / f"{name}.py").write_text(
            f"open({str(tmp_path / (name + '.imported'))!r}, 'w').close()\nraise ImportError('tripwire {name}')\n"
        )
    path, sha = write_standin(tmp_path / "file")
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(tripwires)!r}, {str(ROOT)!r}]
        from om_eval.bench.judging.judge import load_official_prompt_builder
        builder = load_official_prompt_builder({str(path)!r}, expected_sha256={sha!r})
        builder("temporal-reasoning", "q", 3, "r")
        print(sorted(n for n in ("openai", "backoff", "tqdm", "numpy") if n in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert not list(tmp_path.glob("*.imported"))


@pytest.mark.parametrize(
    ("function", "reason"),
    [
        ("@print\ndef get_anscheck_prompt(task, question, answer, response, abstention=False):\n    return ''\n",
         "decorators"),
        ("def get_anscheck_prompt(task, question, answer, response, abstention=open('{m}', 'w')):\n    return ''\n",
         "constant"),
        ("def get_anscheck_prompt(task, question, answer, response, abstention=False):\n"
         "    __import__('os').system('touch {m}')\n    return ''\n", "'__import__'"),
        ("def get_anscheck_prompt(task, question, answer, response, abstention=False):\n"
         "    return ().__class__.__base__.__subclasses__()\n", "uses attribute '__"),
        ("def get_anscheck_prompt(task, question, answer, response, abstention=False):\n"
         "    import os\n    return ''\n", "Import"),
        ("def get_anscheck_prompt(task, question, answer, response, abstention=False):\n"
         "    return TEMPLATES[task].format(question, answer, response)\n", "module-level names"),
        ("def get_anscheck_prompt(task, question, answer, response):\n    return ''\n", "signature"),
        ("def something_else(task, question, answer, response, abstention=False):\n    return ''\n", "found 0"),
    ],
)
def test_unsafe_or_unexpected_functions_are_refused(tmp_path: Path, function: str, reason: str) -> None:
    marker = tmp_path / "side-effect"
    path, sha = write_standin(tmp_path / "bad", standin_source(function.replace("{m}", str(marker))))
    with pytest.raises(OfficialTemplateError, match=reason):
        load_official_prompt_builder(path, expected_sha256=sha)
    assert not marker.exists()


# ------------------------------------------------------------------------------------------------ download


def test_pinned_download_is_checked_cached_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, sha = write_standin(tmp_path / "upstream")
    fetched: list[str] = []

    def fake_fetch(url: str, timeout: float) -> bytes:
        fetched.append(url)
        return path.read_bytes()

    monkeypatch.setattr(judge_module, "_fetch", fake_fetch)
    monkeypatch.setattr(judge_module, "PINNED_SHA256", sha)  # pretend the stand-in is the pinned file
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    first = load_official_templates(expected_sha256=sha, offline=False)
    assert fetched == [RAW_URL] and first.source == RAW_URL
    cached = tmp_path / "cache" / "longmemeval" / f"LongMemEval-{judge_module.PINNED_COMMIT}-evaluate_qa.py"
    assert cached.read_bytes() == path.read_bytes()
    second = load_official_templates(expected_sha256=sha, offline=True)  # served from the cache, no network
    assert fetched == [RAW_URL] and second.source == str(cached) and second.sha256 == sha


def test_a_download_with_the_wrong_hash_is_refused_and_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, sha = write_standin(tmp_path / "upstream")
    monkeypatch.setattr(judge_module, "_fetch", lambda url, timeout: path.read_bytes())
    with pytest.raises(TemplateHashMismatch) as error:
        load_official_templates(cache_dir=tmp_path / "cache", offline=False)
    assert RAW_URL in str(error.value) and sha in str(error.value)
    assert not (tmp_path / "cache").exists()


def test_offline_without_a_cached_copy_names_the_url_and_the_alternative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judge_module, "_fetch", lambda url, timeout: pytest.fail("no download while offline"))
    monkeypatch.setenv("OM_EVAL_OFFLINE", "1")
    with pytest.raises(OfficialTemplateError) as error:
        load_official_prompt_builder(cache_dir=tmp_path / "cache")
    assert RAW_URL in str(error.value) and "source=" in str(error.value)


def test_a_network_failure_names_the_url_and_the_alternative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.error

    def broken(url: str, timeout: float) -> bytes:
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(judge_module, "_fetch", broken)
    with pytest.raises(OfficialTemplateError) as error:
        load_official_prompt_builder(cache_dir=tmp_path / "cache", offline=False)
    assert RAW_URL in str(error.value) and "source=" in str(error.value)


# ------------------------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("reply", "official", "mastra"),
    [
        ("Yes.", True, True),
        ("yes", True, True),
        ("YES", True, True),
        ("yes\n", True, True),
        (" No", False, False),
        ("no, but yes", True, False),
        ("Yes, because it names the city", True, False),
        ("yes. the answer matches", True, True),
        ("eyes closed: no", True, False),
        ("", False, False),
    ],
)
def test_parse_rules(reply: str, official: bool, mastra: bool) -> None:
    assert parse_label(reply, "official") is official
    assert parse_label(reply, "mastra") is mastra


def test_unknown_parse_rule_is_an_error() -> None:
    with pytest.raises(ValueError, match="parse rule"):
        parse_label("yes", "lenient")  # type: ignore[arg-type]  # an unknown rule on purpose


# ---------------------------------------------------------------------------------------------- house mode


def question(qid: str, qtype: str, answer: str | int, text: str = "What did I say?") -> Question:
    return Question(qid, qtype, text, answer, datetime(2023, 5, 30, 23, 40), "2023/05/30 (Tue) 23:40", (), ())


def test_house_templates_differ_by_type_and_route_abstention_by_the_id() -> None:
    prompts = {t: house_prompt(t, "Q", "A", "R") for t in QUESTION_TYPES}
    assert prompts["single-session-user"] == prompts["single-session-assistant"] == prompts["multi-session"]
    distinct = {prompts[t] for t in ("single-session-user", "temporal-reasoning", "knowledge-update",
                                     "single-session-preference")}
    assert len(distinct) == 4
    assert "Rubric: A" in prompts["single-session-preference"]
    assert "off by one" in prompts["temporal-reasoning"]
    judge = Judge.house()
    for qtype in QUESTION_TYPES:
        abstaining = judge.prompt_for(question("gpt4_x_abs", qtype, "You never mentioned it."), "Not sure.")
        assert abstaining == house_prompt(qtype, "What did I say?", "You never mentioned it.", "Not sure.", True)
        assert house_template_name(qtype, True) == "abstention"
        assert "Why it cannot be answered: You never mentioned it." in abstaining
    assert "Reference answer: 3\n" in judge.prompt_for(question("q1", "multi-session", 3), "three")
    assert "{" not in "".join(prompts.values())
    with pytest.raises(ValueError, match="unknown question type"):
        house_prompt("single-session-everything", "Q", "A", "R")


def test_house_template_hash_is_the_identity_of_the_set() -> None:
    judge = Judge.house()
    assert judge.identity == {"mode": "house", "template_sha256": HOUSE_TEMPLATES_SHA256,
                              "model": "openai/gpt-4o-2024-08-06", "parse": "official"}
    assert len(HOUSE_TEMPLATES_SHA256) == 64 and set(HOUSE_TEMPLATES) == {
        "answer", "temporal", "update", "preference", "abstention"}
    assert not judge.is_official


def test_default_judge_settings_match_the_judge_model_config() -> None:
    assert model_settings("gpt-4o-judge") == OFFICIAL_JUDGE_SETTINGS
    assert Judge.house(model="scripted").model == model_settings("scripted")
    bare = Judge.house(model="scripted/other").model
    assert (bare.model, bare.temperature, bare.max_output_tokens) == ("scripted/other", 0.0, 10)


def test_judge_config_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="official mode needs loaded templates"):
        Judge("official")
    with pytest.raises(ValueError, match="mode"):
        Judge("sloppy")  # type: ignore[arg-type]  # an unknown mode on purpose
    lenient = Judge.lenient(model="scripted")
    assert lenient.identity["template_sha256"] != Judge.house(model="scripted").identity["template_sha256"]
    assert "benefit of the doubt" in lenient.prompt("temporal-reasoning", "q", "a", "r")
    path, sha = write_standin(tmp_path)
    judge = Judge.official(path, expected_sha256=sha, parse="mastra")
    assert judge.identity["template_sha256"] == sha and judge.identity["parse"] == "mastra"
    assert not judge.is_official  # not the pinned file


class RecordingClient:
    """Stands in for LLMClient: records what the judge sends."""

    def __init__(self, text: str = "Yes") -> None:
        self.text = text
        self.calls: list[tuple[LLMRequest, str, Any]] = []

    async def call(self, request: LLMRequest, *, stage: str, scope: Any = None, check: Any = None) -> ModelReply:
        self.calls.append((request, stage, scope))
        self.check = check
        return ModelReply(self.text, request.model)


def test_the_judge_request_is_one_user_message_at_temperature_0_with_10_tokens(tmp_path: Path) -> None:
    path, sha = write_standin(tmp_path)
    judge = Judge.official(path, expected_sha256=sha)
    client = RecordingClient("yes")
    q = question("q7", "temporal-reasoning", 18, "How many days?")
    result = asyncio.run(judge_answer(judge, client, q, "19 days"))  # type: ignore[arg-type]  # RecordingClient: a stand-in client
    request, stage, scope = client.calls[0]
    prompt = judge.templates.builder("temporal-reasoning", "How many days?", 18, "19 days")  # type: ignore[union-attr]  # official mode: templates are loaded
    assert request.litellm_kwargs() == {"model": "openai/gpt-4o-2024-08-06",
                                        "messages": [{"role": "user", "content": prompt}],
                                        "temperature": 0, "max_tokens": 10}
    assert request.payload == LLMRequest.build("openai/gpt-4o-2024-08-06", [{"role": "user", "content": prompt}],
                                               temperature=0, max_tokens=10).payload
    assert stage == "judge" and scope == judge.identity
    assert result == JudgeResult(True, "ok", "yes", None, hashlib.sha256(prompt.encode()).hexdigest(), "q7")


# ------------------------------------------------------------------------------ scripted judge and the cache


class ScriptedJudge(ScriptedModel):
    """Says "Yes." when the gold text appears in the response (or, for abstention, when the response declines)."""

    GOLD = ("Reference answer: ", "Rubric: ", "GOLD: ", "CHECKLIST: ")
    NOTE = ("Why it cannot be answered: ", "NOTE: ")
    RESPONSE = ("Response: ", "CANDIDATE: ")

    def _answer(self, messages: list[dict[str, str]], stage: str, fault: str | None) -> str:
        sections = messages[-1]["content"].split("\n\n")
        response = next(s.split(": ", 1)[1] for s in sections if s.startswith(self.RESPONSE)).lower()
        if any(s.startswith(self.NOTE) for s in sections):
            return "Yes." if "don't know" in response or "not" in response else "No."
        gold = next(s.split(": ", 1)[1] for s in sections if s.startswith(self.GOLD)).lower()
        return "Yes." if gold in response else "No."


def scripted_judge(name: str, faults: list[str] | None = None) -> str:
    return register_scripted(name, ScriptedJudge(faults={"judge": faults or []}, name=f"scripted/{name}"))


def cached_client(tmp_path: Path, **settings: Any) -> LLMClient:
    return LLMClient(cache=ResponseCache(tmp_path / "cache"), settings=ClientSettings(**settings), seed=0)


def test_the_default_scripted_model_judges_by_the_reference_words() -> None:
    """``scripted/om-eval`` recognises a judge prompt and compares the response with the reference."""
    client = LLMClient()
    judge = Judge.house(model="scripted/om-eval")
    right = asyncio.run(judge_answer(judge, client, question("q1", "multi-session", "Lisbon"), "You live in Lisbon"))
    wrong = asyncio.run(judge_answer(judge, client, question("q1", "multi-session", "Lisbon"), "Porto"))
    assert (right.status, right.label, wrong.label) == ("ok", True, False)


def test_the_judge_identity_is_the_cache_scope(tmp_path: Path) -> None:
    model_a, model_b = scripted_judge("judge-a"), scripted_judge("judge-b")
    client = cached_client(tmp_path)
    q = question("q1", "single-session-user", "Lisbon", "Where did I move?")
    answer = "You moved to Lisbon."

    def judge_once(judge: Judge) -> JudgeResult:
        return asyncio.run(judge_answer(judge, client, q, answer))

    house = Judge.house(model=model_a)
    first, again = judge_once(house), judge_once(house)
    assert first.label is True and not first.cached and again.cached and again == replace(first, cached=True)
    assert not judge_once(Judge.house(model=model_a, parse="mastra")).cached  # parse rule
    assert not judge_once(Judge.house(model=model_b)).cached  # model
    one, sha_one = write_standin(tmp_path / "one", standin_source(comment="version one"))
    two, sha_two = write_standin(tmp_path / "two", standin_source(comment="version two"))
    official_one = Judge.official(one, model=model_a, expected_sha256=sha_one)
    official_two = Judge.official(two, model=model_a, expected_sha256=sha_two)
    r1 = judge_once(official_one)  # mode: house -> official
    assert not r1.cached and r1.label is True and r1.reply == "Yes."
    r2 = judge_once(official_two)  # same prompt text, other template file
    assert r2.prompt_hash == r1.prompt_hash and not r2.cached
    assert judge_once(official_two).cached
    assert [c.cached for c in client.ledger.records] == [False, True, False, False, False, False, True]


def test_a_failed_judge_call_is_an_error_state_not_a_wrong_answer(tmp_path: Path) -> None:
    model = scripted_judge("judge-broken", ["bad_request"])
    client = cached_client(tmp_path, max_retries=0)
    q = question("q1", "knowledge-update", "blue")
    result = asyncio.run(judge_answer(Judge.house(model=model), client, q, "blue"))
    assert result.status == "error" and result.label is None and result.reply == ""
    assert "judge call to scripted/judge-broken failed (HTTP 400)" in (result.error or "")
    assert result.as_row(q, "blue") == {"question_id": "q1", "question_type": "knowledge-update",
                                        "hypothesis": "blue", "label": None, "status": "error"}
    retry = asyncio.run(judge_answer(Judge.house(model=model), client, q, "blue"))  # the fault is spent
    assert retry.status == "ok" and retry.label is True and not retry.cached


def test_judge_many_keeps_order_bounds_concurrency_and_feeds_the_metrics(tmp_path: Path) -> None:
    from om_eval.bench.metrics import longmemeval_metrics

    model = scripted_judge("judge-many", ["server_error"])
    client = cached_client(tmp_path, max_retries=0)
    items = [
        (question("u1", "single-session-user", "Lisbon"), "Lisbon it is"),  # the server error hits this one
        (question("u2", "single-session-user", "Porto"), "Madrid"),
        (question("m1", "multi-session", 3), "3 times"),
        (question("m2_abs", "multi-session", "Never mentioned."), "I don't know."),
        (question("p1", "single-session-preference", "hiking trips"), "Given your love of hiking trips, try the Alps."),
    ]
    results = asyncio.run(judge_many(Judge.house(model=model), client, items, concurrency=1))
    assert [r.question_id for r in results] == ["u1", "u2", "m1", "m2_abs", "p1"]
    assert [(r.status, r.label) for r in results] == [("error", None), ("ok", False), ("ok", True), ("ok", True),
                                                      ("ok", True)]
    rows = [r.as_row(q, h) for r, (q, h) in zip(results, items)]
    metrics = longmemeval_metrics(rows)
    assert metrics["per_type"]["single-session-user"] == {"accuracy": 0.0, "n": 1}
    assert metrics["per_type"]["multi-session"] == {"accuracy": 1.0, "n": 2}
    assert metrics["overall"] == 0.75 and metrics["abstention"] == {"accuracy": 1.0, "n": 1}
    with pytest.raises(ValueError, match="concurrency"):
        asyncio.run(judge_many(Judge.house(model=model), client, items, concurrency=0))


# ----------------------------------------------------------------------------- replies without a verdict


@pytest.mark.parametrize(
    ("reply", "official", "mastra"),
    [
        ("Yes.", True, True),
        ("no", False, False),
        ("no, but yes", True, False),  # upstream's substring quirk is kept for replies with a verdict
        ("Yes, because it names the city", True, False),
        ("eyes closed: no", True, None),  # official finds the word "no"; mastra reads only the opening word
        ("**Yes**", True, False),
        ("", None, None),
        ("   \n", None, None),
        ("Correct.", None, None),
        ("Yesterday the user said so", None, None),  # 'yes' as a substring only: upstream would say "yes"
        ("The response is right", None, None),
        ("There is no date in the response", None, None),  # an incidental "no" is not a verdict
        ("The response names no city, so: no", False, None),
    ],
)
def test_parse_verdict_tells_no_verdict_from_a_no(reply: str, official: bool | None, mastra: bool | None) -> None:
    assert parse_verdict(reply, "official") is official
    assert parse_verdict(reply, "mastra") is mastra
    for rule, verdict in (("official", official), ("mastra", mastra)):
        if verdict is not None:
            assert verdict is parse_label(reply, rule)  # type: ignore[arg-type]  # rule is 'official' or 'mastra'
    with pytest.raises(ValueError, match="parse rule"):
        parse_verdict("yes", "lenient")  # type: ignore[arg-type]  # an unknown rule on purpose


@pytest.mark.parametrize("reply", ["", "Correct.", "Yesterday"])
def test_a_reply_without_a_verdict_is_an_error_state_not_a_wrong_answer(reply: str) -> None:
    client = RecordingClient(reply)
    q = question("q3", "multi-session", "Lisbon")
    result = asyncio.run(judge_answer(Judge.house(), client, q, "Lisbon"))  # type: ignore[arg-type]  # RecordingClient: a stand-in client
    assert result.status == "error" and result.label is None and result.reply == reply
    assert "no verdict" in (result.error or "") and "q3" in (result.error or "")
    assert client.check(reply) is not None and client.check("no") is None  # the client is told not to cache it


def test_a_reply_without_a_verdict_is_not_cached_and_rejudging_asks_again(tmp_path: Path) -> None:
    model = register_scripted("judge-mute", ScriptedModel(faults={"judge": ["empty"]}))
    client = cached_client(tmp_path)
    q = question("q1", "multi-session", "Lisbon")
    first = asyncio.run(judge_answer(Judge.house(model=model), client, q, "You live in Lisbon"))
    assert (first.status, first.label) == ("error", None)
    second = asyncio.run(judge_answer(Judge.house(model=model), client, q, "You live in Lisbon"))
    assert (second.status, second.label, second.cached) == ("ok", True, False)  # a real call, not the empty reply
    third = asyncio.run(judge_answer(Judge.house(model=model), client, q, "You live in Lisbon"))
    assert third.cached and third.label is True
    assert [c.cached for c in client.ledger.records] == [False, False, True]
    assert (client.ledger.records[0].error or "").startswith("unusable reply")


# ------------------------------------------------------------------------- escapes from the template checker

_HEAD = "def get_anscheck_prompt(task, question, answer, response, abstention=False):\n"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        # A running generator's frame leads to the caller's frame and its module globals (os among them).
        ("    g = (g.gi_frame.f_back.f_back.f_globals for one in [1])\n"
         "    for found in g:\n        found['os'].system('touch {m}')\n    return ''\n", "GeneratorExp"),
        ("    frame = task.gi_frame\n    return ''\n", "attribute 'gi_frame'"),
        ("    return task.f_back.f_globals\n", "attribute 'f_globals'"),
        ("    return task.tb_frame.f_locals\n", "attribute 'f_locals'"),
        ("    return task.cr_frame.f_builtins\n", "attribute 'f_builtins'"),
        ("    return task.ag_frame\n", "attribute 'ag_frame'"),
        ("    return task.gi_code.co_consts\n", "attribute 'co_consts'"),
        ("    return str.mro()\n", "attribute 'mro'"),
        ("    return '{0.__class__.__mro__}'.format(question)\n", "format field '0.__class__.__mro__'"),
        ("    return '{0[os]}'.format(task)\n", "format field '0\\[os\\]'"),
        ("    return '{0:{1.gi_frame}}'.format(task, question)\n", "format field '1.gi_frame'"),
        ("    try:\n        raise ValueError()\n    except ValueError as e:\n"
         "        return e.__traceback__.tb_frame.f_back\n", "attribute 'f_back'"),
    ],
)
def test_frame_and_format_escapes_are_refused_even_without_the_pin(tmp_path: Path, body: str, reason: str) -> None:
    marker = tmp_path / "side-effect"
    function = _HEAD + body.replace("{m}", str(marker))
    path, _ = write_standin(tmp_path / "bad", standin_source(function))
    with pytest.raises(OfficialTemplateError, match=reason):
        load_official_prompt_builder(path, expected_sha256=None)
    assert not marker.exists()


def test_plain_format_fields_are_still_accepted(tmp_path: Path) -> None:
    function = _HEAD + ("    return 'Q: {}\\nA: {answer}\\nR: {response!r:>5}'"
                        ".format(question, answer=answer, response=response)\n")
    path, _ = write_standin(tmp_path / "ok", standin_source(function))
    builder = load_official_prompt_builder(path, expected_sha256=None)
    assert builder("multi-session", "q", "a", "r") == "Q: q\nA: a\nR:   'r'"


@pytest.mark.parametrize("reply", ["", "Correct.", "The answer names no date"])
def test_with_no_verdict_wrong_a_reply_without_one_is_a_wrong_answer(reply: str) -> None:
    # Mastra's harness: anything that is not a yes counts wrong, and the reply stands (it may be cached).
    client = RecordingClient(reply)
    q = question("q3", "multi-session", "Lisbon")
    judge = Judge.house(parse="mastra", no_verdict="wrong")
    result = asyncio.run(judge_answer(judge, client, q, "Lisbon"))  # type: ignore[arg-type]  # RecordingClient: a stand-in client
    assert (result.status, result.label, result.error) == ("ok", False, None)
    assert client.check is None
    assert judge.identity["no_verdict"] == "wrong" and "no_verdict" not in Judge.house().identity


def test_no_verdict_accepts_only_its_two_values() -> None:
    with pytest.raises(ConfigError, match="judge.no_verdict='maybe' is invalid"):
        Judge.house(no_verdict="maybe")  # type: ignore[arg-type]  # an invalid value on purpose
