"""Getting a pinned package: the hash is checked before anything is unpacked, and unpacking cannot escape its folder.

The tarballs here are made in the test (a package.json and a stand-in bundle of our own); the pins are made for them.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
import tarfile
from pathlib import Path

import pytest

from om_eval.om.exact import fetch
from om_eval.om.exact.errors import IntegrityError, PackError, UnsafeArchiveError
from om_eval.om.exact.fetch import files_digest, integrity_key, obtain_package, safe_extract, sri_sha512
from om_eval.om.exact.pins import RELEASES, Release, UnknownReleaseError, release

FILES = {"package/package.json": b'{"name": "@mastra/memory", "version": "0.0.1"}\n',
         "package/dist/bundle.js": b"export const answer = 42;\n"}


def tarball(members: dict[str, bytes] | None = None, extra: list[tarfile.TarInfo] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in (FILES if members is None else members).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for info in extra or []:
            archive.addfile(info)
    return buffer.getvalue()


def pinned(data: bytes, tmp_path: Path) -> Release:
    """A release pinned to ``data`` (its integrity and its files' digest)."""
    root = safe_extract(data, tmp_path / "reference")
    return dataclasses.replace(RELEASES["1.10.0"], version="0.0.1", integrity=sri_sha512(data),
                               files_sha256=files_digest(root), pack_sha256=None)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(url: str, timeout: float = 0) -> bytes:
        raise PackError(f"no network in this test ({url})")

    monkeypatch.setattr(fetch, "download", no_network)


def test_the_pins_are_npm_sri_strings_and_name_the_registry_tarball() -> None:
    for version, pin in RELEASES.items():
        assert pin.integrity.startswith("sha512-") and len(integrity_key(pin.integrity)) == 128
        assert pin.tarball_url == f"https://registry.npmjs.org/@mastra/memory/-/memory-{version}.tgz"
    assert set(RELEASES) == {"1.3.0", "1.10.0", "1.31.0"}
    assert set(RELEASES["1.3.0"].variants) == {"current", "legacy", "condensed"}
    with pytest.raises(UnknownReleaseError, match=r"1\.9\.9.*pinned: 1\.3\.0, 1\.10\.0, 1\.31\.0"):
        release("1.9.9")


def test_a_tampered_tarball_is_refused_before_anything_is_unpacked(tmp_path: Path, offline: None) -> None:
    good = tarball()
    pin = pinned(good, tmp_path)
    tampered = tarball({**FILES, "package/dist/bundle.js": b"export const answer = 43;\n"})
    source = tmp_path / "memory.tgz"
    source.write_bytes(tampered)
    store = tmp_path / "store"
    with pytest.raises(IntegrityError) as refused:
        obtain_package(pin, store, source)
    message = str(refused.value)
    assert "0.0.1" in message and pin.integrity in message and sri_sha512(tampered) in message
    assert "npm pack @mastra/memory@0.0.1" in message and "\n" not in message
    assert not (store / "packages").exists()


def test_a_good_tarball_is_unpacked_once_and_reused(tmp_path: Path, offline: None) -> None:
    data = tarball()
    pin = pinned(data, tmp_path)
    source = tmp_path / "memory.tgz"
    source.write_bytes(data)
    root = obtain_package(pin, tmp_path / "store", source)
    assert (root / "dist" / "bundle.js").read_bytes() == FILES["package/dist/bundle.js"]
    assert root == tmp_path / "store" / "packages" / integrity_key(pin.integrity) / "package"
    (root / "dist" / "om-eval-bundle.mjs").write_text("our own file")  # the exporting copy is not the package's
    assert obtain_package(pin, tmp_path / "store", source) == root


def test_a_damaged_unpacked_copy_is_replaced(tmp_path: Path, offline: None) -> None:
    data = tarball()
    pin = pinned(data, tmp_path)
    source = tmp_path / "memory.tgz"
    source.write_bytes(data)
    root = obtain_package(pin, tmp_path / "store", source)
    (root / "dist" / "bundle.js").write_text("export const answer = 0;\n")
    root = obtain_package(pin, tmp_path / "store", source)
    assert (root / "dist" / "bundle.js").read_bytes() == FILES["package/dist/bundle.js"]


def test_a_downloaded_tarball_is_kept_and_checked_again_when_reused(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    data = tarball()
    pin = pinned(data, tmp_path)
    calls: list[str] = []

    def download(url: str, timeout: float = 0) -> bytes:
        calls.append(url)
        return data

    monkeypatch.setattr(fetch, "download", download)
    store = tmp_path / "store"
    obtain_package(pin, store)
    assert calls == [pin.tarball_url]
    kept = store / "tarballs" / f"{integrity_key(pin.integrity)}.tgz"
    assert kept.read_bytes() == data
    kept.write_bytes(tarball({**FILES, "package/extra.js": b"1"}))
    shutil.rmtree(store / "packages")
    with pytest.raises(IntegrityError, match=str(kept)):
        obtain_package(pin, store)


def test_a_folder_source_is_checked_file_by_file_and_copied(tmp_path: Path, offline: None) -> None:
    data = tarball()
    pin = pinned(data, tmp_path)
    folder = safe_extract(data, tmp_path / "unpacked").parent
    root = obtain_package(pin, tmp_path / "store", folder)
    assert root.is_relative_to(tmp_path / "store") and (root / "package.json").is_file()
    (folder / "package" / "dist" / "bundle.js").write_bytes(b"export const answer = 7;\n")
    with pytest.raises(IntegrityError, match="files hash to"):
        obtain_package(pin, tmp_path / "elsewhere", folder / "package")


def test_a_missing_source_and_a_failed_download_say_what_to_do(tmp_path: Path, offline: None) -> None:
    pin = pinned(tarball(), tmp_path)
    with pytest.raises(PackError, match="does not exist"):
        obtain_package(pin, tmp_path / "store", tmp_path / "nowhere.tgz")
    with pytest.raises(PackError, match="no network"):
        obtain_package(pin, tmp_path / "store")


def _info(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


@pytest.mark.parametrize(
    ("members", "extra"),
    [
        ({"package/../escape.txt": b"x"}, None),
        ({"/etc/escape.txt": b"x"}, None),
        ({"elsewhere/file.txt": b"x"}, None),
        ({"package\\..\\escape.txt": b"x"}, None),
        ({}, [_info("package/link", tarfile.SYMTYPE, "/etc/passwd")]),
        ({}, [_info("package/hard", tarfile.LNKTYPE, "package/package.json")]),
        ({}, [_info("package/fifo", tarfile.FIFOTYPE)]),
        ({}, [_info("package/dev", tarfile.CHRTYPE)]),
    ],
    ids=["dot-dot", "absolute", "outside-package", "backslash", "symlink", "hardlink", "fifo", "device"],
)
def test_unsafe_members_stop_the_whole_extraction(tmp_path: Path, members: dict[str, bytes],
                                                  extra: list[tarfile.TarInfo] | None) -> None:
    data = tarball({**FILES, **members}, extra)
    with pytest.raises(UnsafeArchiveError):
        safe_extract(data, tmp_path / "target")
    assert not (tmp_path / "target").exists()
    assert not (tmp_path / "escape.txt").exists()


def test_a_symbolic_link_in_a_folder_source_is_refused(tmp_path: Path) -> None:
    root = safe_extract(tarball(), tmp_path / "unpacked")
    (root / "dist" / "link.js").symlink_to(root / "package.json")
    with pytest.raises(UnsafeArchiveError, match="symbolic link"):
        files_digest(root)
