"""Reading a dataset file record by record: a JSON array (the official format) or JSON lines, never whole.

Only one record is in memory at a time, so LongMemEval_S (277 MB) and M (2.7 GB) stream; a damaged or truncated
file raises :class:`DatasetValidationError` naming the file and how far it got. :mod:`om_eval.data.loader` turns
the records into questions.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import ijson

#: Bytes read at a time when hashing or scanning a file.
_CHUNK = 1 << 20


class PinnedFileNotFoundError(FileNotFoundError):
    """A pinned input file (LoCoMo, its audit) was not given and could not be downloaded; the message says how to
    give it."""


class DatasetValidationError(ValueError):
    """A record breaks the LongMemEval schema. ``question_id``/``field`` locate it (``None`` when unknown)."""

    def __init__(
        self, source: str, problem: str, *, question_id: str | None = None, field: str | None = None,
        index: int | None = None,
    ) -> None:
        self.source = source
        self.question_id = question_id
        self.field = field
        self.index = index
        self.problem = problem
        where = [source]
        if question_id is not None:
            where.append(f"question {question_id!r}")
        elif index is not None:
            where.append(f"record {index}")
        if field is not None:
            where.append(f"field {field}")
        head = where[0] + (": " + " ".join(where[1:]) if len(where) > 1 else "")
        super().__init__(f"{head}: {problem}")


def sha256_file(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, read in 1 MiB chunks (never the whole file at once)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def read_records(path: str | os.PathLike[str], *, source: str | None = None) -> list[Any]:
    """Every record of a file at once (see :func:`iter_records`; prefer that for S and M)."""
    return list(iter_records(path, source=source))


def iter_records(path: str | os.PathLike[str], *, source: str | None = None) -> Generator[Any, None, None]:
    """Yield the records of a JSON array (the official format) one at a time or, as a fallback, of JSON lines.

    Only one record is in memory at a time. A damaged or truncated array raises a
    :class:`DatasetValidationError` naming the file and how many records were read before the damage.
    """
    source = source or Path(path).name
    with open(path, "rb") as handle:
        head = handle.read(4096).lstrip()
        while not head and handle.read(1):  # only whitespace so far: look further
            head = handle.read(4096).lstrip()
        handle.seek(0)
        if not head:
            return
        if head[:1] == b"[":
            yield from _iter_array(handle, source)
        else:
            yield from _iter_lines(handle, source)


#: Deepest nesting a dataset file may have. A LongMemEval record needs 5 levels (file, record, sessions, session,
#: turn); ijson's item builder keeps one path string per level, so memory grows with the square of the depth (an
#: 80 KB file of brackets took 4 GB). Records are therefore built here from ijson's flat events, with this cap.
MAX_JSON_DEPTH = 64


def _array_items(handle: Any, source: str) -> Iterator[Any]:
    """The elements of the top-level JSON array, one at a time, refusing nesting deeper than MAX_JSON_DEPTH."""
    containers: list[Any] = []
    keys: list[Any] = []  # the pending key of each open object (None for arrays)
    for event, value in ijson.basic_parse(handle, use_float=True):
        if event in ("start_map", "start_array"):
            if len(containers) >= MAX_JSON_DEPTH:
                raise DatasetValidationError(
                    source, f"nests deeper than {MAX_JSON_DEPTH} levels (a LongMemEval record needs 5): it is not a "
                    "LongMemEval file, or it is damaged",
                )
            child: Any = {} if event == "start_map" else []
            if containers:
                _put(containers[-1], keys[-1], child)
            containers.append(child)
            keys.append(None)
        elif event == "map_key":
            keys[-1] = value
        elif event in ("end_map", "end_array"):
            done = containers.pop()
            keys.pop()
            if len(containers) == 1:
                containers[0].clear()  # the array holds nothing once its element is handed out
                yield done
        elif not containers:
            return  # a lone scalar: no records
        else:
            _put(containers[-1], keys[-1], value)
            if len(containers) == 1:
                containers[0].clear()
                yield value


def _put(container: Any, key: Any, value: Any) -> None:
    if type(container) is list:
        container.append(value)
    else:
        container[key] = value


def _iter_array(handle: Any, source: str) -> Iterator[Any]:
    count = 0
    try:
        for record in _array_items(handle, source):
            yield record
            count += 1
    except (ijson.JSONError, UnicodeDecodeError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DatasetValidationError(
            source, f"is not valid JSON ({detail}) after {count} complete record(s): the file looks truncated or "
            "damaged; compare its size and sha256 with the source and download it again",
        ) from None


def _iter_lines(handle: Any, source: str) -> Iterator[Any]:
    """JSON lines; a file that is one JSON value (a lone record, possibly indented) is read whole."""
    first: Any = None
    seen = 0
    for number, line in enumerate(handle, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except RecursionError:
            raise DatasetValidationError(
                source, f"line {number} nests too deeply to be a LongMemEval record: the file is damaged"
            ) from None
        except json.JSONDecodeError as error:
            if seen == 0:
                yield from _single_value(handle, source, number, error)
                return
            raise DatasetValidationError(
                source, f"line {number} is not valid JSON (expected a JSON array of records or JSON lines: {error})"
            ) from error
        seen += 1
        if seen == 1:
            first = value  # held back: a lone non-record value is refused as a whole-file error
            continue
        if seen == 2:
            yield first
        yield value
    if seen == 1:
        _check_lone_value(first, source)
        yield first


def _single_value(handle: Any, source: str, number: int, line_error: json.JSONDecodeError) -> Iterator[Any]:
    handle.seek(0)
    try:
        value = json.loads(handle.read())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise DatasetValidationError(
            source, f"line {number} is not valid JSON (expected a JSON array of records or JSON lines: {line_error})"
        ) from line_error
    if isinstance(value, list):
        yield from value
        return
    _check_lone_value(value, source)
    yield value


def _check_lone_value(value: Any, source: str) -> None:
    if isinstance(value, Mapping) and "question_id" in value:
        return
    kind = f"an object with keys {sorted(value)[:5]}" if isinstance(value, Mapping) else type(value).__name__
    raise DatasetValidationError(source, f"must hold a JSON array of records (or JSON lines), got {kind}")


def fetch_pinned(url: str, file_name: str, sha256: str, *, what: str, timeout: float = 60.0) -> Path:
    """The file at ``url`` in om-eval's data cache (``<cache>/data/<sha256 prefix>/<file_name>``), downloaded once
    and kept only when its sha256 is the pinned one; a cached copy is checked again before it is used."""
    import urllib.error
    import urllib.request

    from om_eval.common.files import atomic_write, cache_folder

    target = cache_folder("data") / sha256[:16] / file_name
    if target.is_file() and sha256_file(target) == sha256:
        return target
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = response.read()
    except (urllib.error.URLError, OSError) as error:
        raise PinnedFileNotFoundError(f"{what}: could not download {url} ({error}); give its path instead") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise DatasetValidationError(url, f"downloaded sha256 {actual} is not the pinned {sha256}: not kept")
    atomic_write(target, data)
    return target


def locate_pinned(
    path: str | os.PathLike[str] | None, *, env: str, file_name: str, sha256: str, what: str, origin: str,
    verify: bool = True, given_by: str | None = None, url: str | None = None,
) -> Path:
    """Find a data file the project never ships: ``path``, else ``$env`` (a folder means ``file_name`` in it), else
    a download of the pinned ``url`` when one is given; the official file is checked against its pinned
    ``sha256``. ``what`` names the data in messages, ``origin`` says where the pinned file comes from, ``given_by``
    how a user passes the path."""
    given_by = given_by or f"${env} (or pass a path)"
    chosen = path or os.environ.get(env)
    if not chosen and url is not None:
        try:
            return fetch_pinned(url, file_name, sha256, what=what)
        except FileNotFoundError as error:
            raise PinnedFileNotFoundError(f"{what} not given ({given_by}) and {error}") from None
    if not chosen:
        raise PinnedFileNotFoundError(f"{what} not given: set {given_by} to {file_name} ({origin}; its licence is CC "
                                "BY-NC 4.0, so om-eval ships no copy)")
    found = Path(chosen)
    if found.is_dir():
        found = found / file_name
    if not found.is_file():
        raise PinnedFileNotFoundError(f"{what} {found} does not exist (from {given_by})")
    if verify and found.name == file_name and (actual := sha256_file(found)) != sha256:
        raise DatasetValidationError(str(found), f"sha256 {actual} is not the pinned {sha256} ({origin}); pass "
                                     "verify=false to use another version knowingly")
    return found


def read_pinned_json(
    path: str | os.PathLike[str] | None, *, env: str, file_name: str, sha256: str, what: str, origin: str,
    verify: bool = True, given_by: str | None = None, url: str | None = None,
) -> tuple[Path, Any]:
    """:func:`locate_pinned`, then the file parsed: ``(the file, its JSON)``."""
    found = locate_pinned(path, env=env, file_name=file_name, sha256=sha256, what=what, origin=origin,
                          verify=verify, given_by=given_by, url=url)
    try:
        return found, json.loads(found.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DatasetValidationError(str(found), f"not JSON: {error}") from None
    except RecursionError:
        raise DatasetValidationError(str(found), f"nests too deeply to be a {what}: it is damaged, or not one"
                                     ) from None
