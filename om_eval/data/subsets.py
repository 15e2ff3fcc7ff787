"""Subsets of a dataset: so many questions per type, these types, these ids, a seeded sample."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from om_eval.common.files import short_hash
from om_eval.data.records import (
    QUESTION_TYPES,
    Dataset,
)
from om_eval.om.config import ConfigError

#: Short names accepted by :func:`select` (case-insensitive) besides the full type strings.
TYPE_ALIASES = {
    "ssu": "single-session-user",
    "ssa": "single-session-assistant",
    "ssp": "single-session-preference",
    "ms": "multi-session",
    "ku": "knowledge-update",
    "tr": "temporal-reasoning",
}


def _count(value: int | None, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        # 0 would choose nothing and write an empty run that looks finished.
        raise ConfigError(f"dataset.subset.{name}={value!r} is invalid: must be a whole number >= 1 "
                         "(leave it unset to keep every question)")
    return value


def _types(types: str | Iterable[str], order: Sequence[str], aliases: Mapping[str, str]) -> list[str]:
    names = [types] if isinstance(types, (str, int)) else list(types)
    chosen = set()
    for name in names:
        full = aliases.get(str(name).lower(), str(name))
        if full not in order:
            raise ConfigError(f"dataset.subset.types: question type {name!r} is unknown: use one of {', '.join(order)}"
                              + (f" or {', '.join(aliases)}" if aliases else ""))
        chosen.add(full)
    return [t for t in order if t in chosen]


def _describe_ids(ids: list[str]) -> str:
    ordered = sorted(ids)
    if len(ordered) <= 20:
        return "ids=" + ",".join(ordered)
    return f"ids={len(ordered)}@sha256:{short_hash(chr(10).join(ordered))}"


def select(
    dataset: Dataset,
    *,
    ids: Iterable[str] | None = None,
    types: str | Iterable[str] | None = None,
    first: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    per_type: int | None = None,
    abstention: bool | None = None,
    haystacks: Iterable[str] | None = None,
    type_order: Sequence[str] = QUESTION_TYPES,
    type_aliases: Mapping[str, str] = TYPE_ALIASES,
) -> Dataset:
    """Choose questions; the result keeps file order and records how it was chosen in ``subset``.

    Filters (``ids``, ``types``, ``abstention``) apply first, then at most one of ``first`` (the first N),
    ``sample`` (N drawn with ``random.Random(seed)`` from the sorted ids) or ``per_type`` (for each type, N drawn
    from that type's sorted ids with a per-type seeded generator). Each takes at most N (fewer when fewer exist).
    ``types`` accepts the full names or their aliases (LongMemEval: ``ssu ssa ssp ms ku tr``; another benchmark
    passes its ``type_order`` and ``type_aliases``); ``abstention`` True keeps only unanswerable questions, False
    only answerable ones; ``haystacks`` keeps the questions of those shared memories (LoCoMo's ``locomo_0``...). The
    description is canonical (ids sorted, types in benchmark order; more than 20 ids are described by count and
    hash) and is appended to an existing one with `` | ``.

    Raises:
        ValueError: unknown ids (all of them named), unknown types, or several of first/sample/per_type.
    """
    first, sample, per_type = _count(first, "first"), _count(sample, "sample"), _count(per_type, "per_type")
    if sum(v is not None for v in (first, sample, per_type)) > 1:
        raise ConfigError("dataset.subset: choose at most one of first, sample and per_type")
    questions = list(dataset.entries)
    parts = []
    if ids is not None:
        wanted = list(dict.fromkeys([ids] if isinstance(ids, str) else ids))
        present = {q.question_id for q in questions}
        unknown = [i for i in wanted if i not in present]
        if unknown:
            shown = ", ".join(repr(i) for i in unknown[:20]) + (" ..." if len(unknown) > 20 else "")
            raise ConfigError(f"{len(unknown)} question id(s) not in dataset {dataset.name!r}: {shown}")
        keep = set(wanted)
        questions = [q for q in questions if q.question_id in keep]
        parts.append(_describe_ids(wanted))
    if haystacks is not None:
        wanted = list(dict.fromkeys([haystacks] if isinstance(haystacks, str) else haystacks))
        present = {q.memory_owner for q in questions}
        unknown = [h for h in wanted if h not in present]
        if unknown:
            raise ConfigError(f"dataset.subset.haystacks: {', '.join(map(repr, unknown))} not in dataset "
                              f"{dataset.name!r} (it has {', '.join(sorted(present)[:12])})")
        questions = [q for q in questions if q.memory_owner in set(wanted)]
        parts.append("haystacks=" + ",".join(sorted(wanted)))
    if types is not None:
        chosen = _types(types, type_order, type_aliases)
        questions = [q for q in questions if q.question_type in chosen]
        parts.append("types=" + ",".join(chosen))
    if abstention is not None:
        questions = [q for q in questions if q.is_abstention == abstention]
        parts.append(f"abstention={'only' if abstention else 'none'}")
    if first is not None:
        questions = questions[:first]
        parts.append(f"first={first}")
    elif sample is not None:
        pool = sorted(q.question_id for q in questions)
        keep = set(random.Random(seed).sample(pool, min(sample, len(pool))))
        questions = [q for q in questions if q.question_id in keep]
        parts.append(f"sample={sample};seed={seed}")
    elif per_type is not None:
        keep = set()
        for qtype in type_order:
            pool = sorted(q.question_id for q in questions if q.question_type == qtype)
            keep.update(random.Random(f"{seed}:{qtype}").sample(pool, min(per_type, len(pool))))
        questions = [q for q in questions if q.question_id in keep]
        parts.append(f"per_type={per_type};seed={seed}")
    if not parts:
        return dataset
    description = ";".join(parts)
    if not questions:
        raise ConfigError(f"dataset.subset ({description}) chose no question of dataset {dataset.name!r}: "
                         "widen the subset")
    if dataset.subset:
        description = f"{dataset.subset} | {description}"
    return dataset.restrict(questions, description)
