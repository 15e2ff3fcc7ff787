"""Getting a pinned ``@mastra/memory`` tarball, checking it is the published one, and unpacking it safely.

Why check before unpacking: the tarball is untrusted until its sha512 matches the pin, so not one member is written
before the whole file is hashed. Why unpack by hand: ``tarfile.extractall`` would honour links, absolute names and
``..``; here only regular files and folders under ``package/`` are written, each checked to stay inside the target.

A folder given as ``prompt.source`` (an unpacked tarball, or ``node_modules/@mastra/memory``) is checked file by
file against :data:`~om_eval.om.exact.pins.Release.files_sha256`, then copied, so the user's folder is never
written to.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import tarfile
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath

from om_eval.common.files import atomic_write
from om_eval.om.exact.errors import IntegrityError, PackError, UnsafeArchiveError
from om_eval.om.exact.pins import Release

DOWNLOAD_TIMEOUT_S = 60
#: The folder every npm tarball puts its files under.
TAR_ROOT = "package"


def sri_sha512(data: bytes) -> str:
    """``sha512-<base64>``: the Subresource Integrity form npm reports as ``dist.integrity``."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def integrity_key(integrity: str) -> str:
    """The hex digest inside an SRI string: a file name for the cache."""
    algorithm, _, encoded = integrity.partition("-")
    if algorithm != "sha512" or not encoded:
        raise ValueError(f"not a sha512 integrity string: {integrity!r}")
    return base64.b64decode(encoded).hex()


def verify_tarball(data: bytes, release: Release, origin: str) -> None:
    """Raise :class:`IntegrityError` unless ``data`` is the tarball npm published for ``release``."""
    found = sri_sha512(data)
    if found != release.integrity:
        raise IntegrityError(
            f"{origin} is not @mastra/memory {release.version} as published: expected integrity "
            f"{release.integrity}, found {found}. Delete it and let om-eval download it again, or point "
            f"prompt.source at the file `npm pack @mastra/memory@{release.version}` writes"
        )


#: Files om-eval itself adds next to the package's bundle (:mod:`om_eval.om.exact.node`); not the package's.
OWN_FILE_PREFIX = "om-eval-"


def files_digest(root: Path) -> str:
    """om-eval's hash of an unpacked package: sha256 over ``<path>\\0<sha256 of content>\\n`` per file, sorted.

    Files om-eval wrote there itself (names starting ``om-eval-``) are left out."""
    entries = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
        if path.name.startswith(OWN_FILE_PREFIX):
            continue
        if path.is_symlink():
            raise UnsafeArchiveError(f"{path} is a symbolic link; an unpacked @mastra/memory has none")
        relative = path.relative_to(root).as_posix()
        entries.append(f"{relative}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n")
    return hashlib.sha256("".join(entries).encode("utf-8")).hexdigest()


def _member_path(name: str) -> PurePosixPath:
    """The path of a member below ``package/``; raises :class:`UnsafeArchiveError` for anything else."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name or not path.parts or path.parts[0] != TAR_ROOT:
        raise UnsafeArchiveError(f"tarball member {name!r} would be written outside {TAR_ROOT}/")
    return path


def safe_extract(data: bytes, target: Path) -> Path:
    """Unpack the npm tarball ``data`` into ``target`` (which must not exist); returns ``target / "package"``.

    Only regular files and folders are written; any link, device or path leaving ``package/`` stops the whole
    extraction (the partial folder is removed).
    """
    target.mkdir(parents=True)
    root = target.resolve()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for member in archive.getmembers():
                relative = _member_path(member.name)
                destination = (root / Path(*relative.parts)).resolve()
                if not destination.is_relative_to(root):
                    raise UnsafeArchiveError(f"tarball member {member.name!r} would be written outside {target}")
                if member.isdir():
                    destination.mkdir(parents=True, exist_ok=True)
                elif member.isfile():
                    source = archive.extractfile(member)
                    assert source is not None
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    with open(destination, "xb") as handle:
                        shutil.copyfileobj(source, handle)
                else:
                    raise UnsafeArchiveError(f"tarball member {member.name!r} is a link or a device, not a file")
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return target / TAR_ROOT


def download(url: str, timeout: float = DOWNLOAD_TIMEOUT_S) -> bytes:
    """GET ``url``; a network failure is a :class:`PackError` naming the offline alternative."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bytes(response.read())
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise PackError(
            f"could not download {url} ({error}); without network, set prompt.source to the tarball "
            "(`npm pack` writes it) or to an unpacked copy"
        ) from error


def _package_root(folder: Path) -> Path:
    for candidate in (folder, folder / TAR_ROOT):
        if (candidate / "package.json").is_file():
            return candidate
    raise PackError(f"prompt.source={folder} holds no package.json (nor package/package.json)")


def _kept(final: Path, release: Release) -> bool:
    """Whether ``final`` holds the release unpacked earlier, still intact (a damaged copy is removed)."""
    root = final / TAR_ROOT
    if not (root / "package.json").is_file():
        return False
    if files_digest(root) == release.files_sha256:
        return True
    shutil.rmtree(final, ignore_errors=True)
    return False


def _install_tree(source_root: Path, store: Path, key: str, release: Release) -> Path:
    """Copy a verified package folder to ``store/packages/<key>/package`` (built aside, then moved in)."""
    final = store / "packages" / key
    if _kept(final, release):
        return final / TAR_ROOT
    staging = final.with_name(f"{key}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    ours = shutil.ignore_patterns(f"{OWN_FILE_PREFIX}*")
    shutil.copytree(source_root, staging / TAR_ROOT, symlinks=True, ignore=ours)
    return _move_in(staging, final)


def _move_in(staging: Path, final: Path) -> Path:
    try:
        staging.rename(final)
    except OSError:  # another process put the same verified release there first
        shutil.rmtree(staging, ignore_errors=True)
    return final / TAR_ROOT


def _unpack_tarball(data: bytes, store: Path, key: str, release: Release) -> Path:
    final = store / "packages" / key
    if _kept(final, release):
        return final / TAR_ROOT
    staging = final.with_name(f"{key}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    safe_extract(data, staging)
    return _move_in(staging, final)


def obtain_package(release: Release, store: Path, source: str | os.PathLike[str] | None = None) -> Path:
    """The verified, unpacked package of ``release`` under ``store``; returns the folder holding package.json.

    An intact copy unpacked earlier is used as it is. Else ``source`` None: the tarball kept in ``store/tarballs``
    from an earlier download, else the registry; a file: a tarball; a folder: an unpacked copy, checked file by
    file. A tarball is hashed before anything is unpacked.

    Raises:
        IntegrityError: the tarball or folder is not the pinned release.
        UnsafeArchiveError: the tarball would write outside its folder.
        PackError: the download failed, or ``source`` does not exist.
    """
    key = integrity_key(release.integrity)
    if _kept(store / "packages" / key, release):
        return store / "packages" / key / TAR_ROOT
    if source is not None:
        path = Path(source).expanduser()
        if path.is_dir():
            root = _package_root(path)
            found = files_digest(root)
            if found != release.files_sha256:
                raise IntegrityError(
                    f"prompt.source={path} is not @mastra/memory {release.version} as published: its files hash to "
                    f"{found}, the pin is {release.files_sha256}. Unpack the published tarball "
                    f"(`npm pack @mastra/memory@{release.version}`) and point prompt.source at it"
                )
            return _install_tree(root, store, key, release)
        if not path.is_file():
            raise PackError(f"prompt.source={path} does not exist")
        data = path.read_bytes()
        verify_tarball(data, release, f"prompt.source={path}")
        return _unpack_tarball(data, store, key, release)
    kept = store / "tarballs" / f"{key}.tgz"
    if kept.is_file():
        data = kept.read_bytes()
        verify_tarball(data, release, str(kept))
    else:
        data = download(release.tarball_url)
        verify_tarball(data, release, release.tarball_url)
        atomic_write(kept, data)
    return _unpack_tarball(data, store, key, release)
