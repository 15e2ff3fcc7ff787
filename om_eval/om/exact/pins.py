"""The ``@mastra/memory`` releases whose own prompts om-eval can use, pinned by hash, and what each one's builders take.

Why pins: ``prompt=mastra_exact`` runs code and text fetched from the npm registry (or handed over as a file). The
tarball must be the one npm published, byte for byte: its SRI ``integrity`` (sha512, as ``npm view <pkg>@<version>
dist.integrity`` prints it) is checked before anything is unpacked. An unpacked folder cannot be checked against
that hash, so each release also pins :func:`~om_eval.om.exact.fetch.files_digest` of its files. ``pack_sha256``
pins the rendered pack itself (:func:`~om_eval.om.exact.pack.pack_digest`): the same package must always give the
same texts, whatever Node renders them.

The builder differences between releases are data here (one record per release), read by the renderer and the
pack, never tested as version numbers elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

PACKAGE = "@mastra/memory"
REGISTRY = "https://registry.npmjs.org"

#: The environment a 1.1-1.3 variant is loaded under (the variant is read once, when the module loads).
_V1_3_VARIANTS: Mapping[str, Mapping[str, str | None]] = {
    "current": {"OM_USE_LEGACY_PROMPT": None, "OM_USE_CONDENSED_PROMPT": None},
    "legacy": {"OM_USE_LEGACY_PROMPT": "1", "OM_USE_CONDENSED_PROMPT": None},
    "condensed": {"OM_USE_LEGACY_PROMPT": None, "OM_USE_CONDENSED_PROMPT": "1"},
}
_ONE_VARIANT: Mapping[str, Mapping[str, str | None]] = {"current": {}}


@dataclass(frozen=True)
class Builders:
    """What a release's prompt builders take, so the renderer knows which shapes to render.

    Attributes:
        observer_request: ``single`` = one user message with history and task (``buildObserverPrompt``, 1.1-1.3);
            ``split`` = a task message (``buildObserverTaskPrompt``) then a history message of parts (1.10+).
        thread_title: the Observer can be asked for a thread title (1.10+).
        custom_instructions: the system prompts take a custom instruction (1.10+).
        hint_extractors: continuation hints are extractors the prompts are built from (1.27+), and prior values
            are listed again as tag blocks.
        compression_levels: the levels ``COMPRESSION_GUIDANCE`` has.
        actor_messages: ``single`` = the actor's memory is one system text (1.1-1.3); ``list`` = several (1.9+).
        retrieval: how the actor's instructions change in retrieval mode: ``none`` (no mode), ``flag`` (one text,
            1.9-1.10), ``scoped`` (by scope and search, 1.2x+).
        context_arguments: the argument layout of ``formatObservationsForContext``.
    """

    observer_request: Literal["single", "split"]
    thread_title: bool
    custom_instructions: bool
    hint_extractors: bool
    compression_levels: tuple[int, ...]
    actor_messages: Literal["single", "list"]
    retrieval: Literal["none", "flag", "scoped"]
    context_arguments: Literal["v1_3", "v1_10", "v1_31"]


@dataclass(frozen=True)
class Release:
    """One pinned release: where its tarball is, its hashes, its prompt variants and its builders."""

    version: str
    integrity: str
    files_sha256: str
    builders: Builders
    pack_sha256: str | None = None
    variants: Mapping[str, Mapping[str, str | None]] = field(default_factory=lambda: _ONE_VARIANT)

    @property
    def tarball_url(self) -> str:
        name = PACKAGE.split("/")[1]
        return f"{REGISTRY}/{PACKAGE}/-/{name}-{self.version}.tgz"


RELEASES: Mapping[str, Release] = {
    release.version: release
    for release in (
        Release(
            version="1.3.0",
            integrity="sha512-RS4CTdBa+ekS4cELtB5mGvvv+6B6rWjJWUuJkdFcl+v1i8DrTTsEAIKRbnWXA1HZBkAhhSejWOOLBw8nDN6vqQ==",
            files_sha256="fabc329e1ebf9dbb4bafe24755ad3405b6f38e2eb220e8f511e77fe6a05592bd",
            pack_sha256="53ce89e3b80902362f5fe617cc2eca3ef7391e4501af7e38ed360f6a7bccaaff",
            builders=Builders(
                observer_request="single", thread_title=False, custom_instructions=False, hint_extractors=False,
                compression_levels=(0, 1, 2), actor_messages="single", retrieval="none", context_arguments="v1_3",
            ),
            variants=_V1_3_VARIANTS,
        ),
        Release(
            version="1.10.0",
            integrity="sha512-Vn27u6pOT5PjEI4IqDZGdmKfw2n+fvEjkuL6W56+CRNBitTWgI9tkjtVlAnYO7hviLmMCDb7HDQ7mHOVjim39Q==",
            files_sha256="4199f809c1436cfe0b63247597de41b13c644ab79ac815bd5c106246d5491b4d",
            pack_sha256="40b7205ba4300a88d2f7f21d95f70aaa20f92310a925cfd64939410fc261bfcb",
            builders=Builders(
                observer_request="split", thread_title=True, custom_instructions=True, hint_extractors=False,
                compression_levels=(0, 1, 2, 3, 4), actor_messages="list", retrieval="flag",
                context_arguments="v1_10",
            ),
        ),
        Release(
            version="1.31.0",
            integrity="sha512-qt+J++XfotafhF19SaA+gQL/XoP3ACISfEOjhcevgcO3AjLKsbIuBFsGN4jJMmPtYJK0xsV47O0PD2ZlE7h+og==",
            files_sha256="17a3e9a40dedf14ac89a264a3d3539c62a985aee4860e9ed2062da3bce9483fe",
            pack_sha256="c1a252e870b08cac4a8220bf9c51f3d2972b8ac1add8eb001a8494a695a8ad2c",
            builders=Builders(
                observer_request="split", thread_title=True, custom_instructions=True, hint_extractors=True,
                compression_levels=(0, 1, 2, 3, 4), actor_messages="list", retrieval="scoped",
                context_arguments="v1_31",
            ),
        ),
    )
}


class UnknownReleaseError(ValueError):
    """A version om-eval has no pin for."""


def release(version: str) -> Release:
    """The pinned release ``version``; raises :class:`UnknownReleaseError` naming the pinned ones."""
    try:
        return RELEASES[version]
    except KeyError:
        known = ", ".join(RELEASES)
        raise UnknownReleaseError(
            f"prompt.mastra_version={version!r} is not pinned in om-eval (pinned: {known}); a new release needs its "
            "integrity, files and pack hashes added to om_eval/om/exact/pins.py"
        ) from None
