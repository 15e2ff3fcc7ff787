"""The LongMemEval paper's reader prompt, read at run time from ``src/generation/run_generation.py`` at the pinned
commit (never shipped here).

Only two string literals are taken from the file, found by :mod:`ast` without running any of it: the answer
template of the plain setting (no chain-of-thought, no fact expansion) and the header each retrieved chunk is
shown under. Both are checked for their three ``{}`` fields. The layout around them follows the file: chunks sorted
by date, each chunk's turns as a JSON list after a newline, the history cut to the reader's budget.
"""

from __future__ import annotations

import ast
import os
import string
from dataclasses import dataclass
from pathlib import Path

from om_eval.bench.upstream import UpstreamFile, read_verified

RUN_GENERATION = UpstreamFile(
    "src/generation/run_generation.py", "4f1eb3c69d7ad40f04065b9c0bc86f6582441018fc6ff751d162d66c95baf672",
    "the official reader prompt", "memory.reader_source")
#: Words that tell the plain answer template from its chain-of-thought and fact-expansion siblings.
_HISTORY_HEADING = "History Chats:"
_OTHER_SETTINGS = ("step by step", "facts")
_CHUNK_HEADER_START = "\n### Session {}:"


class OfficialReaderError(RuntimeError):
    """The reader prompt could not be obtained, is not the pinned file, or does not have the expected shape."""


@dataclass(frozen=True)
class OfficialReader:
    """The paper's reader prompt parts and where they came from."""

    answer_template: str
    """``{history}``, ``{question date}``, ``{question}`` as three positional ``{}`` fields."""
    chunk_header: str
    """A chunk's number, date and content as three positional ``{}`` fields."""
    sha256: str
    source: str

    def chunk(self, number: int, date: str, turns_json: str) -> str:
        return self.chunk_header.format(number, date, "\n" + turns_json)

    def prompt(self, history: str, question_date: str, question: str) -> str:
        return self.answer_template.format(history, question_date, question)


def _fields(text: str) -> list[str | None]:
    return [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]


def _literals(text: str, where: str) -> set[str]:
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise OfficialReaderError(f"{where}: not Python ({error})") from None
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def _one(found: set[str], what: str, where: str) -> str:
    if len(found) != 1:
        raise OfficialReaderError(f"{where}: expected one {what}, found {len(found)}; is this the pinned file?")
    value = next(iter(found))
    if _fields(value) != ["", "", ""]:
        raise OfficialReaderError(f"{where}: the {what} does not have three {{}} fields")
    return value


def extract_reader(text: str, where: str) -> tuple[str, str]:
    """The answer template and the chunk header among the file's string literals."""
    literals = _literals(text, where)
    answers = {s for s in literals if _HISTORY_HEADING in s and s.rstrip().endswith("Answer:")
               and not any(word in s for word in _OTHER_SETTINGS)}
    headers = {s for s in literals if s.startswith(_CHUNK_HEADER_START)}
    return _one(answers, "plain answer template", where), _one(headers, "chunk header", where)


def load_official_reader(source: str | os.PathLike[str] | None = None, *, cache_dir: Path | None = None,
                         offline: bool | None = None, timeout: float = 30.0) -> OfficialReader:
    """The pinned reader prompt: from ``source`` (a LongMemEval clone or the file), else the cache, else downloaded
    once. Any other version of the file is refused.

    Raises:
        OfficialReaderError: missing file, downloads off with nothing cached, another version, unexpected shape.
    """
    data, where = read_verified(RUN_GENERATION, source, OfficialReaderError, cache_dir=cache_dir, offline=offline,
                                timeout=timeout)
    answer, header = extract_reader(data.decode("utf-8"), where)
    return OfficialReader(answer, header, RUN_GENERATION.sha256, where)
