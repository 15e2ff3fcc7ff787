"""The official LongMemEval judge templates, loaded at run time from the upstream repository (never shipped here).

``get_anscheck_prompt`` of ``src/evaluation/evaluate_qa.py`` at the pinned commit is downloaded (or read from a
local clone), checked against its pinned sha256, cached, parsed with :mod:`ast`, and *only* the function definition
is compiled and executed, in an empty namespace. The module's top level (``import openai, backoff, tqdm, numpy``, the
CLI) never runs. Why a module of its own: fetching, pinning and the AST guard are one idea; grading is another
(:mod:`om_eval.bench.judging.judge`).
"""

from __future__ import annotations

import ast
import os
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from om_eval.bench.upstream import (
    PINNED_COMMIT,
    UpstreamFile,
    fetch_url,
    read_local,
    read_pinned,
)
from om_eval.bench.upstream import sha256_of as _sha256

PromptBuilder = Callable[..., str]
"""``(task, question, answer, response, abstention=False) -> str``, the upstream signature."""

# -------------------------------------------------------------------------------------- official templates

PINNED_SHA256 = "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251"
EVALUATE_QA = UpstreamFile("src/evaluation/evaluate_qa.py", PINNED_SHA256, "the official judge templates",
                           "judge.source")
UPSTREAM_FILE = EVALUATE_QA.path
RAW_URL = EVALUATE_QA.url
FUNCTION_NAME = "get_anscheck_prompt"
PARAMETERS = ("task", "question", "answer", "response", "abstention")

#: The builtins the extracted function gets, and nothing else. ``template.format(...)`` is a method of the
#: template literal and looks up no builtin; the body's only global lookup is the exception it raises for an
#: unknown task. Leaving out ``__import__``, ``open``, ``exec``, ``eval``, ``getattr``, ``type`` and ``object``
#: means the body can neither import, open files, nor reflect; the AST check below also refuses underscore
#: attributes and names (the ``().__class__.__subclasses__()`` route), generator expressions and the attributes
#: of frames, code, generators and tracebacks (the ``gen.gi_frame.f_back.f_globals`` route), and format strings
#: whose fields read attributes or items (``"{0.gi_frame}".format(...)``). This is defence in depth, not a
#: sandbox: the sha256 pin is what makes the file trusted.
SAFE_BUILTINS: Mapping[str, Any] = {
    "NotImplementedError": NotImplementedError,
    "ValueError": ValueError,
    "KeyError": KeyError,
    "TypeError": TypeError,
    "str": str,
}
_FORBIDDEN_NODES = (
    ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
    ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom, ast.GeneratorExp,
)
#: Attribute prefixes of frame, code, generator, coroutine, async-generator and traceback internals. From a
#: generator, ``gi_frame.f_back.f_globals`` reaches the caller's module globals (``os`` among them), so none of
#: these may be read, whatever object they are read from.
_FORBIDDEN_ATTRIBUTE_PREFIXES = ("_", "gi_", "cr_", "ag_", "f_", "tb_", "co_", "func_", "im_")
#: Other attributes that lead from a value to classes or code.
_FORBIDDEN_ATTRIBUTES = frozenset({"mro"})


class OfficialTemplateError(RuntimeError):
    """The official templates could not be obtained or do not have the expected shape."""


class TemplateHashMismatch(OfficialTemplateError):
    """The upstream file's sha256 is not the pinned one."""

    def __init__(self, where: str, expected: str, actual: str) -> None:
        super().__init__(
            f"{where}: sha256 {actual} differs from the expected {expected} (LongMemEval {UPSTREAM_FILE} at "
            f"commit {PINNED_COMMIT}); refusing to use it. Check out that commit, or pass expected_sha256=None "
            "to accept another version knowingly (its scores are then not official)"
        )
        self.where = where
        self.expected = expected
        self.actual = actual


@dataclass(frozen=True)
class OfficialTemplates:
    """The upstream prompt builder and where it came from.

    Attributes:
        builder: ``get_anscheck_prompt`` as defined upstream, executed alone.
        sha256: sha256 of the upstream file's bytes (part of the judge identity).
        source: the file path or URL it was read from.
    """

    builder: PromptBuilder = field(repr=False)
    sha256: str
    source: str

    @property
    def pinned(self) -> bool:
        """The file is the pinned upstream version."""
        return self.sha256 == PINNED_SHA256

    def __call__(self, task: str, question: str, answer: Any, response: str, abstention: bool = False) -> str:
        return self.builder(task, question, answer, response, abstention)


def _fetch(url: str, timeout: float) -> bytes:
    return fetch_url(url, timeout)


def _read_local(source: str | os.PathLike[str]) -> tuple[bytes, str]:
    return read_local(EVALUATE_QA, source, OfficialTemplateError)


def _read_pinned(
    expected: str | None, cache_dir: Path | None, offline: bool | None, timeout: float
) -> tuple[bytes, str]:
    # Looked up at call time, so a test can stand in for the download.
    return read_pinned(EVALUATE_QA, expected, cache_dir, offline, timeout, OfficialTemplateError,
                       fetch=lambda url, seconds: _fetch(url, seconds))


def _check_function(node: ast.FunctionDef, where: str) -> None:
    args = node.args
    names = tuple(a.arg for a in args.args)
    if (names != PARAMETERS or args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg
            or len(args.defaults) != 1):
        raise OfficialTemplateError(
            f"{where}: {FUNCTION_NAME} must have the signature ({', '.join(PARAMETERS[:-1])}, abstention=False)"
        )
    # Nothing may be evaluated when the def statement runs: no decorators, annotations or computed defaults.
    if node.decorator_list or node.returns or any(a.annotation for a in args.args):
        raise OfficialTemplateError(f"{where}: {FUNCTION_NAME} must have no decorators or annotations")
    if not isinstance(args.defaults[0], ast.Constant):
        raise OfficialTemplateError(f"{where}: the default of 'abstention' must be a constant")
    stored = set(PARAMETERS)
    loaded: set[str] = set()
    for child in ast.walk(ast.Module(body=node.body, type_ignores=[])):
        if isinstance(child, _FORBIDDEN_NODES):
            raise OfficialTemplateError(
                f"{where}: {FUNCTION_NAME} contains a {type(child).__name__} (line {child.lineno}); only plain "
                "string formatting is accepted"
            )
        if isinstance(child, ast.Attribute) and (child.attr.startswith(_FORBIDDEN_ATTRIBUTE_PREFIXES)
                                                 or child.attr in _FORBIDDEN_ATTRIBUTES):
            raise OfficialTemplateError(f"{where}: {FUNCTION_NAME} uses attribute {child.attr!r} (line {child.lineno})")
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            field_path = _format_field_traversal(child.value)
            if field_path is not None:
                raise OfficialTemplateError(
                    f"{where}: {FUNCTION_NAME} has a format field {field_path!r} (line {child.lineno}); only plain "
                    "{} or {name} fields are accepted"
                )
        if isinstance(child, ast.Name):
            if child.id.startswith("_"):
                raise OfficialTemplateError(f"{where}: {FUNCTION_NAME} uses name {child.id!r} (line {child.lineno})")
            (stored if isinstance(child.ctx, ast.Store) else loaded).add(child.id)
    free = sorted(loaded - stored - set(SAFE_BUILTINS))
    if free:
        raise OfficialTemplateError(
            f"{where}: {FUNCTION_NAME} refers to module-level names {free}; only the function definition is run"
        )


def _format_field_traversal(text: str) -> str | None:
    """The first ``str.format`` field of ``text`` that reads an attribute or an item (``{0.gi_frame}``,
    ``{0[x]}``), nested format specs included; ``None`` when there is none or ``text`` is no format string."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return None  # not a valid format string: formatting it would raise before reading anything
    for _, field_name, spec, _ in parsed:
        if field_name and ("." in field_name or "[" in field_name):
            return field_name
        nested = _format_field_traversal(spec) if spec else None
        if nested is not None:
            return nested
    return None


def _extract_builder(text: str, where: str) -> PromptBuilder:
    try:
        tree = ast.parse(text, filename=where)
    except SyntaxError as error:
        raise OfficialTemplateError(f"{where}: not valid Python ({error})") from error
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == FUNCTION_NAME]
    if len(found) != 1:
        raise OfficialTemplateError(f"{where}: expected one top-level def {FUNCTION_NAME}, found {len(found)}")
    _check_function(found[0], where)
    code = compile(ast.Module(body=[found[0]], type_ignores=[]), where, "exec")
    namespace: dict[str, Any] = {"__builtins__": dict(SAFE_BUILTINS)}
    exec(code, namespace)
    return namespace[FUNCTION_NAME]


def load_official_templates(
    source: str | os.PathLike[str] | None = None,
    *,
    expected_sha256: str | None = PINNED_SHA256,
    cache_dir: Path | None = None,
    offline: bool | None = None,
    timeout: float = 30.0,
) -> OfficialTemplates:
    """Load the upstream prompt builder with its identity.

    Args:
        source: a clone of ``xiaowu0162/LongMemEval`` (its ``src/evaluation/evaluate_qa.py`` is read) or the
            path of that file. ``None`` reads the pinned file from the local cache
            (``$OM_EVAL_CACHE_DIR/longmemeval``, else ``~/.cache/om-eval/longmemeval``), downloading it from
            :data:`RAW_URL` on first use.
        expected_sha256: the sha256 the file must have; ``None`` accepts any version (not official then).
        cache_dir: where the downloaded file is kept (default above).
        offline: forbid the download; ``None`` follows ``OM_EVAL_OFFLINE`` / ``HF_HUB_OFFLINE``.
        timeout: download timeout in seconds.

    Raises:
        TemplateHashMismatch: the file is not the expected version (names file, expected and actual hash).
        OfficialTemplateError: missing file, no network while offline, or an unexpected function shape.
    """
    if source is None:
        data, where = _read_pinned(expected_sha256, cache_dir, offline, timeout)
    else:
        data, where = _read_local(source)
    actual = _sha256(data)
    if expected_sha256 is not None and actual != expected_sha256:
        raise TemplateHashMismatch(where, expected_sha256, actual)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise OfficialTemplateError(f"{where}: not UTF-8 text ({error})") from error
    return OfficialTemplates(_extract_builder(text, where), actual, where)


def load_official_prompt_builder(
    source: str | os.PathLike[str] | None = None, *, expected_sha256: str | None = PINNED_SHA256, **options: Any
) -> PromptBuilder:
    """The upstream ``get_anscheck_prompt(task, question, answer, response, abstention=False) -> str``.

    Same arguments as :func:`load_official_templates`, which also returns the file's identity.
    """
    return load_official_templates(source, expected_sha256=expected_sha256, **options).builder
