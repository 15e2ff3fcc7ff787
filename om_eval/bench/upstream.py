"""Files of an upstream benchmark repository read at run time, pinned by commit and sha256 (never shipped here).

LongMemEval's official judge templates (``src/evaluation/evaluate_qa.py``), the paper's reader prompt
(``src/generation/run_generation.py``) and BEAM's judge prompts come the same way: from a local clone or file when
one is given, else from the cache, else downloaded once from the pinned commit (unless downloads are off), and
refused when the bytes are not the pinned ones.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from om_eval.common.files import OFFLINE_ENV, atomic_write, cache_folder, downloads_off

PINNED_COMMIT = "9e0b455f4ef0e2ab8f2e582289761153549043fc"

Fetch = Callable[[str, float], bytes]


@dataclass(frozen=True)
class UpstreamFile:
    """One pinned file of the repository, and how om-eval names it to a user."""

    path: str
    """Its path in the repository (``src/evaluation/evaluate_qa.py``)."""
    sha256: str
    what: str
    """What it gives, for messages (``the official judge templates``)."""
    option: str
    """The option that points at a local copy (``judge.source``)."""
    repository: str = "xiaowu0162/LongMemEval"
    commit: str = PINNED_COMMIT

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repository}/{self.commit}/{self.path}"

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def project(self) -> str:
        """The repository's name (``LongMemEval``, ``BEAM``), for messages and cache names."""
        return self.repository.rsplit("/", 1)[-1]

    @property
    def cache_name(self) -> str:
        return f"{self.project}-{self.commit}-{self.name}"


def fetch_url(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        data: bytes = response.read()
        return data


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_local(file: UpstreamFile, source: str | os.PathLike[str], error: type[Exception]) -> tuple[bytes, str]:
    """The file from a clone (``source`` a folder) or the file itself."""
    path = Path(source).expanduser()
    if path.is_dir():
        candidate = path / file.path
        if not candidate.is_file():
            raise error(f"{path} is a directory without {file.path}: pass a clone of {file.repository} (at "
                        f"commit {file.commit}) or the path of {file.name} itself")
        path = candidate
    elif not path.is_file():
        raise error(f"{path} does not exist: pass a {file.project} clone or its {file.path}")
    return path.read_bytes(), str(path)


def read_verified(file: UpstreamFile, source: str | os.PathLike[str] | None, error: type[Exception], *,
                  cache_dir: Path | None = None, offline: bool | None = None,
                  timeout: float = 30.0) -> tuple[bytes, str]:
    """The pinned file from ``source`` (a clone or the file) or the cache/download, refused with ``error`` unless
    its sha256 is the pinned one: ``(its bytes, where they came from)``."""
    if source is None:
        data, where = read_pinned(file, file.sha256, cache_dir, offline, timeout, error)
    else:
        data, where = read_local(file, source, error)
    actual = sha256_of(data)
    if actual != file.sha256:
        raise error(f"{where}: sha256 {actual} differs from the pinned {file.sha256} ({file.project} {file.path} at "
                    f"commit {file.commit[:7]}); refusing to use it: check out that commit")
    return data, where


def read_pinned(file: UpstreamFile, expected: str | None, cache_dir: Path | None, offline: bool | None,
                timeout: float, error: type[Exception], fetch: Fetch = fetch_url) -> tuple[bytes, str]:
    """The pinned file from the cache, downloading it once when allowed. A download is returned whatever its hash
    (the caller checks it against ``expected``); only the bytes expected (the pinned ones by default) are cached."""
    cached = (cache_dir or cache_folder(file.project.lower())) / file.cache_name
    if cached.is_file():
        data = cached.read_bytes()
        if expected is None or sha256_of(data) == expected:
            return data, str(cached)
    if offline if offline is not None else downloads_off():
        raise error(f"{file.what} are not cached at {cached} and downloads are off ({' / '.join(OFFLINE_ENV)} or "
                    f"offline=True). Fetch {file.url} once with network, or pass {file.option}=<a {file.project} clone "
                    f"or its {file.name}>")
    try:
        data = fetch(file.url, timeout)
    except (urllib.error.URLError, OSError) as failure:
        raise error(f"could not download {file.what} from {file.url} ({failure}); pass {file.option}=<a "
                    f"{file.project} clone or its {file.name}> instead") from failure
    if sha256_of(data) == (expected if expected is not None else file.sha256):
        atomic_write(cached, data)
    return data, file.url
