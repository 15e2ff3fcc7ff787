"""BEAM's own judge prompts, read at run time from the pinned upstream commit (never shipped here).

Two files of ``mohammadtavakoli78/BEAM`` at :data:`COMMIT`: the rubric prompt is the string literal
``unified_llm_judge_base_prompt`` of ``src/prompts.py``; the equivalence messages are the system message and the
user message (an f-string over the two snippets) inside ``llm_equivalence`` of ``src/evaluation/compute_metrics.py``.
Both are read like LongMemEval's templates (:mod:`om_eval.bench.upstream`: a clone given as ``judge.source``, else
the cache, else one download), checked against their pinned sha256, and parsed with :mod:`ast`: nothing of either
file is executed.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from om_eval.bench.judging.official_templates import OfficialTemplateError
from om_eval.bench.upstream import UpstreamFile, read_verified

__all__ = ["COMMIT", "METRICS_FILE", "PINNED_RUBRIC_SHA256", "PROMPTS_FILE", "BeamTemplateError", "BeamTemplates",
           "fill", "load_beam_templates"]

COMMIT = "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"
_REPOSITORY = "mohammadtavakoli78/BEAM"
PROMPTS_FILE = UpstreamFile("src/prompts.py", "2f630cc983ab0c34cfa80b1b4d340f5b51a9b4a3baa5af8aea9503c585eda06a",
                            "BEAM's judge prompts", "judge.source", _REPOSITORY, COMMIT)
METRICS_FILE = UpstreamFile("src/evaluation/compute_metrics.py",
                            "0715226375e9d24646c49c504194ba61cfb26d39415da5ebe9bdc4c6dcd3726c",
                            "BEAM's equivalence messages", "judge.source", _REPOSITORY, COMMIT)
RUBRIC_NAME = "unified_llm_judge_base_prompt"
EQUIVALENCE_FUNCTION = "llm_equivalence"
#: The f-string names of the two snippets in upstream's user message, and our slots for them.
_SNIPPETS = {"first_paragraph": "{reference}", "second_paragraph": "{system}"}


_SLOT = re.compile(r"\{(question|criterion|response|reference|system)\}")


def fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with its slots filled in one pass (a reply that contains ``{criterion}`` stays as written)."""
    return _SLOT.sub(lambda m: values.get(m.group(1), m.group(0)), template)


@dataclass(frozen=True)
class BeamTemplates:
    """The rubric prompt and the equivalence messages of one template set, and its identity."""

    rubric: str
    equivalence: tuple[str, str]
    sha256: str
    source: str = "house"
    upstream: bool = False
    """Upstream's texts: filled with ``<rubric_item>``/``<llm_response>`` as upstream does."""

    def rubric_prompt(self, question: str, criterion: str, response: str) -> str:
        if self.upstream:  # upstream fills two slots in turn and leaves <question> as it is
            return self.rubric.replace("<rubric_item>", criterion).replace("<llm_response>", response)
        return fill(self.rubric, {"question": question, "criterion": criterion, "response": response})

    def equivalence_messages(self, reference: str, system: str) -> list[dict[str, str]]:
        instruction, pair = self.equivalence
        values = {"reference": reference, "system": system}
        return [{"role": "system", "content": fill(instruction, values)},
                {"role": "user", "content": fill(pair, values)}]


class BeamTemplateError(OfficialTemplateError):
    """BEAM's judge prompts could not be had, or do not have the expected shape (an upstream-templates error, so
    commands report it in one line as they do LongMemEval's)."""


def _combined(prompts_sha256: str, metrics_sha256: str) -> str:
    return hashlib.sha256(f"{prompts_sha256}:{metrics_sha256}".encode()).hexdigest()


PINNED_RUBRIC_SHA256 = _combined(PROMPTS_FILE.sha256, METRICS_FILE.sha256)
"""The identity of upstream's pinned template pair."""


def _rubric(text: str, where: str) -> str:
    tree = ast.parse(text, filename=where)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == RUBRIC_NAME for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
            raise BeamTemplateError(f"{where}: {RUBRIC_NAME} is not a plain string literal")
    raise BeamTemplateError(f"{where}: no top-level {RUBRIC_NAME}")


def _message_content(node: ast.Dict, role: str) -> ast.expr | None:
    pairs = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
             if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    found = pairs.get("role")
    if isinstance(found, ast.Constant) and found.value == role:
        return pairs.get("content")
    return None


def _template(node: ast.expr | None, where: str, role: str) -> str:
    """A message's text with the snippets as our slots (an f-string of the two names, or a literal)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        raise BeamTemplateError(f"{where}: the {role} message of {EQUIVALENCE_FUNCTION} is not a string")
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
        elif (isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name)
              and value.value.id in _SNIPPETS and value.format_spec is None and value.conversion == -1):
            parts.append(_SNIPPETS[value.value.id])
        else:
            raise BeamTemplateError(f"{where}: the {role} message of {EQUIVALENCE_FUNCTION} formats something other "
                                    f"than {', '.join(_SNIPPETS)}")
    return "".join(parts)


def _equivalence(text: str, where: str) -> tuple[str, str]:
    tree = ast.parse(text, filename=where)
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == EQUIVALENCE_FUNCTION]
    if len(found) != 1:
        raise BeamTemplateError(f"{where}: expected one top-level def {EQUIVALENCE_FUNCTION}, found {len(found)}")
    dicts = [n for n in ast.walk(found[0]) if isinstance(n, ast.Dict)]
    system = next((c for d in dicts if (c := _message_content(d, "system")) is not None), None)
    user = next((c for d in dicts if (c := _message_content(d, "user")) is not None), None)
    return _template(system, where, "system"), _template(user, where, "user")


def _read(file: UpstreamFile, source: str | None, cache_dir: Path | None,
          offline: bool | None) -> tuple[str, str, str]:
    data, where = read_verified(file, source, BeamTemplateError, cache_dir=cache_dir, offline=offline)
    return data.decode("utf-8"), where, file.sha256


def load_beam_templates(source: str | None = None, *, cache_dir: Path | None = None,
                        offline: bool | None = None) -> BeamTemplates:
    """Upstream's rubric prompt and equivalence messages with their identity.

    Args:
        source: a BEAM clone (its ``src/`` is read); ``None`` or ``beam`` reads the pinned files from the cache,
            downloading them once (unless downloads are off).

    Raises:
        BeamTemplateError: a missing file, no network while offline, a file that is not the pinned one, or an
            unexpected shape (each names the file).
    """
    source = None if source in (None, "beam") else source
    read: Callable[[UpstreamFile], tuple[str, str, str]] = lambda f: _read(f, source, cache_dir, offline)  # noqa: E731
    prompts, prompts_where, prompts_sha = read(PROMPTS_FILE)
    metrics, metrics_where, metrics_sha = read(METRICS_FILE)
    return BeamTemplates(_rubric(prompts, prompts_where), _equivalence(metrics, metrics_where),
                         _combined(prompts_sha, metrics_sha), source=f"{prompts_where} + {metrics_where}",
                         upstream=True)
