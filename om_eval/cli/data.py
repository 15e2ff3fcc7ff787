"""``om-eval data synth|check``: generate synthetic LongMemEval files, or load and summarise a dataset (LongMemEval
or LoCoMo, told apart by their first record).

Module-level imports are kept light (no pandas, datasets or rich) so that ``om-eval --help`` stays instant.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from om_eval.data.records import Dataset

__all__ = ["add_parser", "detect_benchmark", "run", "summarise", "summarise_locomo"]

BENCHMARKS = ("longmemeval", "locomo")

DATA_EXAMPLES = """examples:
  om-eval data synth --size mini --out results/lme-mini.json             # every type + abstention, a few KB
  om-eval data synth --size s --questions-per-type 5 --seed 1 --out results/lme-s-synth.json
  om-eval data synth --size small --oracle --out results/lme-small-oracle.json   # evidence sessions only
  om-eval data synth --size m --questions-per-type 8 --abstention 2 --out results/lme-m-synth.json  # ~370 MB
  om-eval data check results/lme-mini.json                               # validate, count, estimate tokens
  om-eval data check s                                                   # $LONGMEMEVAL_DIR or the HF hub
  om-eval data check $LOCOMO_PATH                                        # LoCoMo: conversations, categories

`data check` accepts a path or a split (oracle, s, m); splits are looked up in --data-dir, then
$LONGMEMEVAL_DIR, then the Hugging Face hub (xiaowu0162/longmemeval-cleaned, pinned revision). A file whose
first record has `conversation` and `qa` (or a file named locomo10.json) is checked as LoCoMo; --benchmark
says which when that guess is wrong.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``data`` command and its verbs (``synth``, ``check``) to ``subparsers``."""
    data = subparsers.add_parser(
        "data",
        help="generate synthetic LongMemEval data, or validate and summarise a dataset (LongMemEval or LoCoMo)",
        description="Generate seeded synthetic datasets in the exact LongMemEval schema, or load a LongMemEval "
        "or LoCoMo file (validated record by record) and print what it holds.",
        epilog=DATA_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = data.add_subparsers(dest="data_command", metavar="VERB", required=True)
    synth = verbs.add_parser("synth", help="write a seeded synthetic dataset (JSON array, LongMemEval schema)")
    synth.add_argument("--size", choices=("mini", "small", "s", "m"), default="mini",
                       help="mini: a few short sessions; small: ~12 sessions, ~12k tokens; s: ~48 sessions, "
                       "~115k tokens; m: ~500 sessions, ~1.5M tokens per question (default: mini). Records are "
                       "written one at a time, never held together")
    synth.add_argument("--questions-per-type", type=int, default=1, metavar="N",
                       help="answerable questions of each of the 6 types (default: 1)")
    synth.add_argument("--abstention", type=int, metavar="N",
                       help="_abs questions added on top (default: 6%% of the answerable ones, at least 1)")
    synth.add_argument("--seed", type=int, default=0, metavar="N", help="generator seed (default: 0)")
    synth.add_argument("--oracle", action="store_true",
                       help="evidence sessions only, not sorted by date, like longmemeval_oracle.json")
    synth.add_argument("--out", required=True, metavar="PATH", help="file to write")
    check = verbs.add_parser("check", help="load and validate a dataset; print counts and a token estimate")
    check.add_argument("target", metavar="PATH", help="a dataset file, or a LongMemEval split: oracle, s, m")
    check.add_argument("--benchmark", choices=("auto", *BENCHMARKS), default="auto",
                       help="how to read the file (default: auto, from its first record)")
    check.add_argument("--data-dir", metavar="DIR", help="folder holding the official files (for a split)")
    check.add_argument("--no-verify", action="store_true",
                       help="skip the pinned sha256 (and per-type count) checks of official files")
    check.add_argument("--sample", type=int, default=3, metavar="N",
                       help="questions (LoCoMo: conversations) whose haystack tokens are counted with o200k_base "
                       "(default: 3; 0 = skip)")
    check.add_argument("--audit", metavar="PATH",
                       help="LoCoMo: also check this audit of its gold answers against the file (as "
                       "dataset.corrections=locomo_audit does)")
    check.add_argument("--json", action="store_true", help="print the summary as JSON")
    return data


def _spread(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"min": 0, "mean": 0, "max": 0}
    return {"min": min(values), "mean": round(sum(values) / len(values), 1), "max": max(values)}


def summarise(dataset: Dataset, *, sample: int = 3) -> dict[str, Any]:
    """Counts per type, abstention, sessions/turns per question and a token estimate on a seeded sample."""
    from om_eval.data.records import QUESTION_TYPES

    entries = dataset.entries
    per_type = Counter(e.question_type for e in entries)
    abstention = Counter(e.question_type for e in entries if e.is_abstention)
    chosen = {e.question_id for e in random.Random(0).sample(list(entries), min(max(sample, 0), len(entries)))}
    sessions, evidence, turns, texts = [], [], [], []
    int_answers = has_answer = repeated = 0
    for q in dataset.iter_questions():  # one question at a time: S and M are streamed
        repeated += len({s.session_id for s in q.sessions}) < len(q.sessions)
        int_answers += isinstance(q.answer, int)
        has_answer += sum(t.has_answer is True for s in q.sessions for t in s.turns)
        sessions.append(len(q.sessions))
        evidence.append(sum(s.is_evidence for s in q.sessions))
        turns.append(sum(len(s.turns) for s in q.sessions))
        if q.question_id in chosen:
            texts.append("\n".join(t.content for s in q.sessions for t in s.turns))
    summary: dict[str, Any] = {
        "name": dataset.name,
        "path": dataset.path,
        "sha256": dataset.sha256,
        "questions": len(entries),
        "per_type": {t: {"n": per_type[t], "abstention": abstention[t]} for t in QUESTION_TYPES},
        "abstention": sum(abstention.values()),
        "int_answers": int_answers,
        "sessions_per_question": _spread(sessions),
        "evidence_sessions_per_question": _spread(evidence),
        "turns_per_question": _spread(turns),
        "has_answer_true_turns": has_answer,
        "questions_with_repeated_session_ids": repeated,
        "tokens_per_question": None,
    }
    if texts:
        from om_eval.om.tokens import TokenizerUnavailableError, count_text

        try:
            counts = [count_text(text) for text in texts]
        except TokenizerUnavailableError as error:
            summary["tokens_per_question"] = {"error": str(error)}
        else:
            summary["tokens_per_question"] = {"counter": "o200k_base", "text": "turn contents",
                                              "sample": len(texts), **_spread([float(c) for c in counts])}
    return summary


def _print_summary(summary: dict[str, Any], pinned: str | None) -> None:
    check = f"the pinned {pinned}" if pinned else "not an official file: hash recorded, not checked"
    print(f"{summary['name']}  {summary['path']}")
    print(f"sha256 {summary['sha256']} ({check})")
    print(f"questions: {summary['questions']} (abstention {summary['abstention']}, "
          f"int answers {summary['int_answers']})")
    print(f"  {'type':<28}{'n':>6}{'abs':>6}")
    for qtype, row in summary["per_type"].items():
        print(f"  {qtype:<28}{row['n']:>6}{row['abstention']:>6}")
    for key, label in (("sessions_per_question", "sessions/question"),
                       ("evidence_sessions_per_question", "evidence sessions/question"),
                       ("turns_per_question", "turns/question")):
        s = summary[key]
        print(f"{label}: min {s['min']:g}, mean {s['mean']:g}, max {s['max']:g}")
    print(f"has_answer=true turns: {summary['has_answer_true_turns']}; "
          f"questions with a repeated session id: {summary['questions_with_repeated_session_ids']}")
    tokens = summary["tokens_per_question"]
    if tokens is None:
        return
    if "error" in tokens:
        print(f"tokens/question: unavailable ({tokens['error']})")
    else:
        print(f"tokens/question (o200k_base, turn contents, sample of {tokens['sample']}): "
              f"min {tokens['min']:,.0f}, mean {tokens['mean']:,.0f}, max {tokens['max']:,.0f}")


def _run_synth(args: argparse.Namespace) -> int:
    from om_eval.data.loader import sha256_file
    from om_eval.data.synth import iter_generate, write_dataset

    if args.questions_per_type < 0 or (args.abstention is not None and args.abstention < 0):
        print("--questions-per-type and --abstention must be >= 0", file=sys.stderr)
        return 2
    started = time.perf_counter()
    ids: list[str] = []

    def counted() -> Any:
        for item in iter_generate(size=args.size, questions_per_type=args.questions_per_type,
                                  abstention=args.abstention, seed=args.seed, oracle=args.oracle):
            ids.append(item.record["question_id"])
            yield item.record

    path = write_dataset(counted(), args.out)
    elapsed = time.perf_counter() - started
    abstention = sum("_abs" in qid for qid in ids)
    rate = f", {len(ids) / elapsed:,.0f} questions/s" if elapsed > 0 else ""
    print(f"Wrote {len(ids)} questions ({len(ids) - abstention} answerable, {abstention} abstention; "
          f"size {args.size}, seed {args.seed}{', oracle' if args.oracle else ''}) to {path}")
    print(f"{path.stat().st_size:,} bytes, sha256 {sha256_file(path)}; generated and written in {elapsed:.2f} s"
          f"{rate}")
    return 0


def detect_benchmark(target: str) -> str | None:
    """``locomo`` for a file named ``locomo10.json`` or whose first record has ``conversation`` and ``qa``; ``None``
    for a file with no record; else ``longmemeval`` (a split name, a missing or unreadable file: its loader then
    says what is wrong)."""
    from pathlib import Path

    from om_eval.data.locomo import LOCOMO_FILE
    from om_eval.data.reading import DatasetValidationError, iter_records

    path = Path(target).expanduser()
    if path.name == LOCOMO_FILE:
        return "locomo"
    if not path.is_file():
        return "longmemeval"
    records = iter_records(path)
    try:
        first = next(records, None)
    except (DatasetValidationError, OSError):
        return "longmemeval"
    finally:
        records.close()
    if first is None:
        return None
    looks = isinstance(first, dict) and "conversation" in first and "qa" in first
    return "locomo" if looks else "longmemeval"


def _spread_of(values: Sequence[int]) -> dict[str, float]:
    return _spread([float(v) for v in values])


def summarise_locomo(conversations: Sequence[Any], *, name: str, path: str, sha256: str, sample: int = 3
                     ) -> dict[str, Any]:
    """Conversations, questions per category, sessions and turns per conversation, the evidence the validation let
    through (:func:`om_eval.data.locomo.loose_evidence`) and a token estimate on a seeded sample of conversations."""
    from om_eval.data.locomo import CATEGORY_NAMES, loose_evidence

    questions = [q for c in conversations for q in c.questions]
    per_category = Counter(q.category for q in questions)
    notes = [note for c in conversations for note in loose_evidence(c)]
    chosen = random.Random(0).sample(list(conversations), min(max(sample, 0), len(conversations)))
    summary: dict[str, Any] = {
        "benchmark": "locomo",
        "name": name,
        "path": path,
        "sha256": sha256,
        "conversations": len(conversations),
        "questions": len(questions),
        "per_category": {f"{number} {label}": per_category[number] for number, label in CATEGORY_NAMES.items()},
        "sessions_per_conversation": _spread_of([len(c.sessions) for c in conversations]),
        "turns_per_conversation": _spread_of([sum(len(s.turns) for s in c.sessions) for c in conversations]),
        "questions_per_conversation": _spread_of([len(c.questions) for c in conversations]),
        "evidence": {kind: [f"{qid} {text!r}" if text else qid for qid, found, text in notes if found == kind]
                     for kind in ("none", "malformed", "dangling")},
        "tokens_per_conversation": None,
    }
    if chosen:
        from om_eval.om.tokens import TokenizerUnavailableError, count_text

        try:
            counts = [count_text("\n".join(t.text for s in c.sessions for t in s.turns)) for c in chosen]
        except TokenizerUnavailableError as error:
            summary["tokens_per_conversation"] = {"error": str(error)}
        else:
            summary["tokens_per_conversation"] = {"counter": "o200k_base", "text": "turn texts",
                                                  "sample": len(chosen), **_spread([float(c) for c in counts])}
    return summary


def _print_locomo(summary: dict[str, Any], pinned: bool) -> None:
    check = "the pinned locomo10.json" if pinned else "not the official file: hash recorded, not checked"
    print(f"{summary['name']}  {summary['path']}")
    print(f"sha256 {summary['sha256']} ({check})")
    print(f"LoCoMo conversations: {summary['conversations']}, questions: {summary['questions']}")
    print(f"  {'category':<28}{'n':>6}")
    for category, n in summary["per_category"].items():
        print(f"  {category:<28}{n:>6}")
    for key, label in (("sessions_per_conversation", "sessions/conversation"),
                       ("turns_per_conversation", "turns/conversation"),
                       ("questions_per_conversation", "questions/conversation")):
        s = summary[key]
        print(f"{label}: min {s['min']:g}, mean {s['mean']:g}, max {s['max']:g}")
    evidence = summary["evidence"]
    for kind, label in (("none", "questions citing no evidence"),
                        ("malformed", "malformed evidence entries, read as the dialog ids in them"),
                        ("dangling", "evidence ids naming no turn, ignored (another id of the question does)")):
        if evidence[kind]:
            print(f"{label}: {len(evidence[kind])} ({', '.join(evidence[kind])})")
    if (audit := summary.get("audit")) is not None:
        print(f"audit {audit['path']}: {audit['entries']} entries, {audit['matched']} name questions of this file, "
              f"{audit['answers_corrected']} correct the gold answer")
    tokens = summary["tokens_per_conversation"]
    if tokens is None:
        return
    if "error" in tokens:
        print(f"tokens/conversation: unavailable ({tokens['error']})")
    else:
        print(f"tokens/conversation (o200k_base, turn texts, sample of {tokens['sample']}): "
              f"min {tokens['min']:,.0f}, mean {tokens['mean']:,.0f}, max {tokens['max']:,.0f}")


def _check_locomo(args: argparse.Namespace) -> int:
    from om_eval.data.locomo import LOCOMO_SHA256, read_locomo
    from om_eval.data.locomo_audit import match_audit, read_audit
    from om_eval.data.reading import DatasetValidationError, sha256_file

    try:
        found, conversations = read_locomo(args.target, verify=not args.no_verify)
        if args.audit:
            audit_file, audit = read_audit(args.audit, verify=not args.no_verify)
            fixes = match_audit(audit, conversations, source=audit_file.name, against=found.name)
    except (FileNotFoundError, DatasetValidationError) as error:
        print(f"data check failed: {error}", file=sys.stderr)
        return 1
    digest = sha256_file(found)
    summary = summarise_locomo(conversations, name=found.stem, path=str(found), sha256=digest,
                               sample=max(args.sample, 0))
    if args.audit:
        asked = {q.id: q for c in conversations for q in c.questions}
        summary["audit"] = {"path": str(audit_file), "entries": len(audit), "matched": len(fixes),
                            "answers_corrected": sum(fixes[i].answer != asked[i].answer for i in fixes)}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _print_locomo(summary, digest == LOCOMO_SHA256)
    return 0


def _run_check(args: argparse.Namespace) -> int:
    from om_eval.data.loader import (
        LME_FILES,
        DatasetIntegrityError,
        DatasetNotFoundError,
        DatasetValidationError,
        load_dataset,
    )

    benchmark = args.benchmark if args.benchmark != "auto" else detect_benchmark(args.target)
    if benchmark is None:
        print(f"data check failed: {args.target}: holds no record (an empty array or no JSON lines): neither "
              "LongMemEval questions nor LoCoMo conversations; check that the file was written completely",
              file=sys.stderr)
        return 1
    if benchmark == "locomo":
        return _check_locomo(args)
    try:
        dataset = load_dataset(args.target, data_dir=args.data_dir, verify=not args.no_verify)
    except (DatasetNotFoundError, DatasetIntegrityError, DatasetValidationError, ValueError) as error:
        print(f"data check failed: {error}", file=sys.stderr)
        return 1
    summary = summarise(dataset, sample=max(args.sample, 0))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        pinned = next((f.filename for f in LME_FILES.values() if f.sha256 == dataset.sha256), None)
        _print_summary(summary, pinned)
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``om-eval data <verb>``; returns the exit code (1 when a dataset fails to load or validate)."""
    if args.data_command == "synth":
        return _run_synth(args)
    if args.data_command == "check":
        return _run_check(args)
    print(f"unknown data command {args.data_command!r}", file=sys.stderr)
    return 2
