"""Files every layer writes the same way: names made from free-form ids, atomic writes, short hashes, file locks.

Why atomic writes: a reader (another job, a resumed run, a person) must see the old file or the new one, never half
of one, whatever kills the writer. Why one place: the temporary name (host, process and a random part, so writers on
a shared folder never collide) and the cleanup after a failure were written nine times before.

Why not the id itself as a file name: a dataset may use any characters and any length, and a file system allows
neither (255 bytes per name on most). Mapping the unsafe characters alone is not enough either: ``a.b`` and ``a_b``
would share a file. An id that is already short and safe keeps its own name, so files written before this rule still
match.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

#: Longest readable part kept from an id; the name adds a 16-character hash, well under 255 bytes with any suffix.
READABLE_CHARS = 80
_SAFE = re.compile(r"[A-Za-z0-9_-]+")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def safe_file_name(identifier: str) -> str:
    """A file name for ``identifier``: the id itself when it is short and safe, else a readable prefix + hash.

    Distinct ids always get distinct names (the hash covers the whole id); the same id always gets the same name.
    """
    if len(identifier) <= READABLE_CHARS and _SAFE.fullmatch(identifier):
        return identifier
    readable = _UNSAFE.sub("_", identifier)[:READABLE_CHARS]
    return f"{readable}~{short_hash(identifier)}"


def short_hash(data: str | bytes, length: int = 16) -> str:
    """The first ``length`` hex digits of the sha256 of ``data`` (text as UTF-8): ids of configs, prompts, files."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()[:length]


#: This machine's name, safe in a file name: writers on a shared folder never pick the same name.
HOST = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "host"


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], mode: str = "w", *, fsync: bool = False) -> Iterator[IO[Any]]:
    """A file to write ``path``'s new content into; it replaces ``path`` when the block ends without an error.

    The temporary file sits next to ``path`` under a name no other writer uses; on an error it is removed and
    ``path`` is left as it was. ``fsync`` makes the content durable before the rename (for files a crash must not
    empty). Text modes write UTF-8.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.{HOST}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            yield handle
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | os.PathLike[str], data: str | bytes, *, fsync: bool = False) -> Path:
    """Replace ``path`` with ``data`` at once (:func:`atomic_writer`); returns the path."""
    with atomic_writer(path, "wb" if isinstance(data, bytes) else "w", fsync=fsync) as handle:
        handle.write(data)
    return Path(path)


def open_lock(path: str | os.PathLike[str]) -> int:
    """A file descriptor on the lock file ``path`` (created if missing); closing it drops any lock it holds."""
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` if no other process holds it; the kernel drops it when this process dies,
    SIGKILL included, so a lock is never left stale."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def held_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Wait for the exclusive lock on ``path`` and hold it for the block."""
    fd = open_lock(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


#: Environment switches that forbid downloads (the first is om-eval's own; the second is commonly set by people who
#: mean "no network", and the test suite sets it).
OFFLINE_ENV = ("OM_EVAL_OFFLINE", "HF_HUB_OFFLINE")


def downloads_off() -> bool:
    return any(os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"} for name in OFFLINE_ENV)


def cache_folder(name: str) -> Path:
    """``<cache base>/<name>``: the base is ``$OM_EVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/om-eval``, else
    ``~/.cache/om-eval`` (model answers live in ``llm/``, local weights in ``models/``, data files in ``data/``)."""
    explicit = os.environ.get("OM_EVAL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser() / name
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "om-eval" / name
