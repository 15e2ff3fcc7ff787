"""The pack against the package: for generated inputs, every :class:`PromptPack` method gives exactly the text the
release's own builder gives (Node), for @mastra/memory 1.3.0, 1.10.0 and 1.31.0.

Where a builder formats messages itself, the pack is given them formatted by om-eval (``format_message`` for 1.1-1.10,
``format_history_lines`` for 1.15+) and the actor's observations optimised and split by om-eval's own helpers, so a
difference in those shows here too. Also: the pack rendered with the package's real dependencies (npm install) hashes
to the pin, a second load needs neither Node nor network, and a tampered copy of the real tarball is refused.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from om_eval.om.context import optimize_for_context, split_observation_chunks
from om_eval.om.exact import IntegrityError, PromptPack, fetch, load_pack, node, render
from om_eval.om.exact.cache import pack_digest, pack_path, pack_store
from om_eval.om.exact.fetch import obtain_package
from om_eval.om.exact.node import UNDEFINED, BuilderProcess, find_bundle
from om_eval.om.exact.pins import RELEASES
from om_eval.om.groups import render_groups, wrap_in_group
from om_eval.om.history_lines import format_history_lines
from om_eval.om.observer import format_message, format_messages
from om_eval.om.records import Message
from tests.npm_oracle import node_folder
from tests.om.exact.packs import VERSIONS, cache_base, real_pack, real_package

pytestmark = [pytest.mark.integration, pytest.mark.mastra]

CASES = 120  # per builder, per release
SEED = 20260601
#: The @mastra/core each release was published against (its devDependency), for the real-dependency rendering.
REAL_DEPENDENCIES = {"1.3.0": {"@mastra/core": "1.4.0", "zod": "3.25.76"},
                     "1.10.0": {"@mastra/core": "1.17.0", "zod": "3.25.76"},
                     "1.31.0": {"@mastra/core": "1.71.0", "zod": "3.25.76"}}
HINT_SETS = [[], ["current-task"], ["suggested-response"], ["current-task", "suggested-response"]]

WORDS = ["tea", "Lisbon", "résumé", "日本", "🔴", "✅", "$&", "$1", "${x}", "`code`", "\\n", "\\", "</thread>",
         "<current-task>", "->", "[note]", "  ", "\t", "---", "Date:", "**User**", '"quoted"', "{braces}"]


def text(rng: random.Random, lines: int = 3, empty: float = 0.0) -> str:
    if rng.random() < empty:
        return ""
    out = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, lines))]
    joined = rng.choice(["\n", "\n", "\n\n", "\r\n"]).join(out)
    return rng.choice(["", "", " ", "\n"]) + joined + rng.choice(["", "", " ", "\n"])


def maybe(rng: random.Random, value: str) -> str | None:
    return value if rng.random() < 0.6 else rng.choice([None, ""])


class Reference:
    """The release's own builders, called as the engine calls them."""

    def __init__(self, builders: BuilderProcess, version: str) -> None:
        self.b = builders
        self.profile = RELEASES[version].builders
        self.day = 0

    def message(self, rng: random.Random, thread_id: str = "t") -> tuple[Message, dict[str, Any]]:
        """A text message on a day of its own, as om-eval and as the oracle's message spec."""
        self.day += 1
        moment = datetime(2025, 1, 1, rng.randint(0, 23), rng.randint(0, 59)) + timedelta(days=self.day)
        body = text(rng) or "x"
        role = rng.choice(["user", "assistant"])
        spec = {"role": role, "text": body,
                "createdAt": [moment.year, moment.month, moment.day, moment.hour, moment.minute, 0, 0]}
        return Message(f"m{self.day}", thread_id, role, body, moment), spec

    def formatted(self, message: Message) -> str:
        """One message as the release's history formats it, by om-eval's formatter."""
        if self.profile.hint_extractors:  # 1.15+ history lines; every message is on a day of its own
            return format_history_lines([message])
        shown = format_message(message)
        assert shown is not None
        return shown

    def extractors(self, kind: str, hints: Sequence[str], title: bool = False) -> dict[str, Any]:
        return {"$extractors": {"kind": kind, "hints": list(hints), "threadTitle": title}}


def _opt(value: Any) -> Any:
    return UNDEFINED if value is None else value


# -- generated cases: (what, the pack's text, the builder's text) ------------------------------------------------


def system_cases(pack: PromptPack, ref: Reference, rng: random.Random, variant: str) -> Iterator[tuple[Any, Any]]:
    p = ref.profile
    for _ in range(CASES // 4):
        multi = rng.random() < 0.5
        title = p.thread_title and rng.random() < 0.5
        instruction = maybe(rng, text(rng)) if p.custom_instructions else None
        hints = rng.choice(HINT_SETS) if p.hint_extractors else None
        ours = pack.observer_system_prompt(multi_thread=multi, thread_title=title, instruction=instruction,
                                           hints=hints)
        args: list[Any] = [multi]
        if p.custom_instructions:
            args += [_opt(instruction), title]
        if p.hint_extractors:
            args.append(ref.extractors("observation", hints or [], title))
        yield ours, ref.b.call("buildObserverSystemPrompt", *args, variant=variant)
        args = [_opt(instruction)] if p.custom_instructions else []
        if p.hint_extractors:
            args.append(ref.extractors("reflection", hints or []))
        ours = pack.reflector_system_prompt(instruction=instruction, hints=hints)
        yield ours, ref.b.call("buildReflectorSystemPrompt", *args, variant=variant)


def prior_values(rng: random.Random, kinds: Sequence[str]) -> dict[str, str]:
    return {kind: text(rng, 2, empty=0.25) for kind in kinds if rng.random() < 0.6}


def observer_cases(pack: PromptPack, ref: Reference, rng: random.Random) -> Iterator[tuple[Any, Any]]:
    p = ref.profile
    for _ in range(CASES):
        previous = maybe(rng, text(rng, 5))
        if p.observer_request == "single":
            pairs = [ref.message(rng) for _ in range(rng.randint(1, 4))]
            skip = rng.random() < 0.3
            ours = pack.observer_prompt(previous, format_messages([m for m, _ in pairs]), skip_hints=skip)
            theirs = ref.b.call("buildObserverPrompt", _opt(previous), {"$messages": [s for _, s in pairs]},
                                {"skipContinuationHints": skip})
            yield ours, theirs
            threads = [(f"thread-{i}-{text(rng, 1)}", [ref.message(rng) for _ in range(rng.randint(0, 3))])
                       for i in range(rng.randint(1, 4))]
            ours = pack.observer_prompt_multi(previous, [(t, format_messages([m for m, _ in ms])) for t, ms in threads],
                                              thread_count=len(threads))
            theirs = ref.b.call("buildMultiThreadObserverPrompt", _opt(previous),
                                {"$map": [[t, {"$messages": [s for _, s in ms]}] for t, ms in threads]},
                                [t for t, _ in threads])
            yield ours, theirs
            continue
        title = rng.random() < 0.5
        skip = rng.random() < 0.3
        truncated = rng.random() < 0.3
        hints = rng.choice(HINT_SETS) if p.hint_extractors else None
        plain = ["current-task", "suggested-response", "thread-title"]
        extracted = ["extracted:current-task", "extracted:suggested-response", "extracted:thread-title"]
        prior = prior_values(rng, plain + (extracted if p.hint_extractors else []))
        options: dict[str, Any] = {"skipContinuationHints": skip, "wasTruncated": truncated,
                                   "includeThreadTitle": title}
        for kind, option in render._PRIOR_OPTION.items():
            if kind in prior:
                options[option] = prior[kind]
        if p.hint_extractors:
            options["extractors"] = ref.extractors("observation", hints or [], title)
            options["priorExtractedValues"] = {k.split(":")[1]: v for k, v in prior.items() if k in extracted}
        ours = pack.observer_task(previous, prior=prior, truncated=truncated, thread_title=title, skip_hints=skip,
                                  hints=hints)
        yield ours, ref.b.call("buildObserverTaskPrompt", _opt(previous), options)

        hinted = [(f"t{i}{text(rng, 1)}", prior_values(rng, plain + (extracted if p.hint_extractors else [])))
                  for i in range(rng.randint(0, 4))]
        metadata = []
        for thread_id, values in hinted:
            fields: dict[str, Any] = {render._METADATA_FIELD[k]: v for k, v in values.items() if k in plain}
            if p.hint_extractors:
                fields["extracted"] = {k.split(":")[1]: v for k, v in values.items() if k in extracted}
            metadata.append([thread_id, fields])
        args: list[Any] = [_opt(previous), [t for t, _ in hinted], {"$map": metadata}, truncated, title]
        if p.hint_extractors:
            args.append(ref.extractors("observation", hints or [], title))
        ours = pack.observer_task_multi(previous, hinted, truncated=truncated, thread_title=title, hints=hints)
        yield ours, ref.b.call("buildMultiThreadObserverTaskPrompt", *args)

        pairs = [ref.message(rng) for _ in range(rng.randint(0, 4))]
        parts = pack.observer_history([ref.formatted(m) for m, _ in pairs])
        yield parts, ref.b.call("buildObserverHistoryMessage", {"$messages": [s for _, s in pairs]})
        by_thread = [(f"th{i}", [ref.message(rng) for _ in range(rng.randint(1, 3))]) for i in range(rng.randint(1, 4))]
        parts = pack.observer_history_multi([(t, [ref.formatted(m) for m, _ in ms]) for t, ms in by_thread])
        theirs = ref.b.call("buildMultiThreadObserverHistoryMessage",
                            {"$map": [[t, {"$messages": [s for _, s in ms]}] for t, ms in by_thread]},
                            [t for t, _ in by_thread])
        yield parts, theirs


def observations(rng: random.Random, groups: bool = True) -> str:
    lines = []
    for _ in range(rng.randint(0, 6)):
        roll = rng.random()
        if roll < 0.15:
            lines.append(f"Date: Jan {rng.randint(1, 28)}, 2025")
        elif roll < 0.3:
            lines.append(f"  * -> {text(rng, 1)}")
        elif roll < 0.35:
            lines.append("")
        else:
            lines.append(f"* {rng.choice(['🔴', '🟡', '✅'])} ({rng.randint(10, 23)}:{rng.randint(10, 59)}) "
                         + text(rng, 1).strip())
    body = "\n".join(lines)
    if groups and rng.random() < 0.25:
        body = wrap_in_group(body, f"m{rng.randint(1, 9)}:m{rng.randint(10, 99)}", f"g{rng.randint(1, 9)}") + (
            "\n\n" + wrap_in_group("* 🔴 (09:00) more", "m100:m101", "g2") if rng.random() < 0.5 else "")
    return body


def reflector_cases(pack: PromptPack, ref: Reference, rng: random.Random) -> Iterator[tuple[Any, Any]]:
    p = ref.profile
    for _ in range(CASES):
        level = rng.choice(p.compression_levels)
        manual = maybe(rng, text(rng))
        skip = rng.random() < 0.3
        shown = observations(rng)
        hints = rng.choice(HINT_SETS) if p.hint_extractors else None
        prior = prior_values(rng, ["current-task", "suggested-response"]) if p.hint_extractors else None
        args: list[Any] = [shown, _opt(manual), level, skip]
        if p.hint_extractors:
            args += [ref.extractors("reflection", hints or []), prior or UNDEFINED]
        ours = pack.reflector_prompt(shown, level=level, manual_prompt=manual, skip_hints=skip, hints=hints,
                                     prior=prior)
        yield ours, ref.b.call("buildReflectorPrompt", *args)
        yield pack.compression_guidance(level), ref.b.get("COMPRESSION_GUIDANCE")[str(level)]


def actor_cases(pack: PromptPack, ref: Reference, rng: random.Random) -> Iterator[tuple[Any, Any]]:
    p = ref.profile
    boundary = "\n\n--- message boundary (2025-01-0{}T10:00:00.000Z) ---\n\n"
    for _ in range(CASES):
        chunks = [observations(rng, groups=False) for _ in range(rng.randint(1, 3))]
        raw = "".join(c + (boundary.format(i + 1) if i < len(chunks) - 1 else "") for i, c in enumerate(chunks))
        if not raw.strip():
            raw = "* 🔴 (10:00) something"
        task, suggested, other = (maybe(rng, text(rng)) for _ in range(3))
        retrieval: Any = None
        if p.retrieval == "flag" and rng.random() < 0.4:
            retrieval = True
        elif p.retrieval == "scoped" and rng.random() < 0.4:
            retrieval = {"scope": rng.choice(["thread", "resource"]), "search": rng.random() < 0.5}
        if p.context_arguments == "v1_3":
            ours = pack.actor_context(optimize_for_context(raw), current_task=task, suggested_response=suggested,
                                      other_conversations=other)
            theirs = [ref.b.method("formatObservationsForContext", {}, raw, _opt(task), _opt(suggested),
                                   _opt(other), UNDEFINED)]
            yield ours, theirs
            continue
        if retrieval is True:  # 1.10 shows the groups as sections and optimises nothing in retrieval mode
            shown = split_observation_chunks(render_groups(raw) or raw)
        else:
            shown = split_observation_chunks(optimize_for_context(raw, keep_link_labels=p.hint_extractors))
        ours = pack.actor_context(shown, current_task=task, suggested_response=suggested, other_conversations=other,
                                  retrieval=retrieval)
        if p.context_arguments == "v1_10":
            theirs = ref.b.method("formatObservationsForContext", {}, raw, _opt(task), _opt(suggested), _opt(other),
                                  UNDEFINED, bool(retrieval))
        else:
            fields = {"observationConfig": {"extractors": []}, "reflectionConfig": {"extractors": []},
                      "retrievalScope": (retrieval or {}).get("scope", "thread"),
                      "retrievalSearch": (retrieval or {}).get("search", True)}
            theirs = ref.b.method("formatObservationsForContext", fields, raw, _opt(task), _opt(suggested), UNDEFINED,
                                  _opt(other), UNDEFINED, bool(retrieval))
        yield ours, theirs


# -- the tests ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _where(ours: Any, theirs: Any) -> str:
    """Where two texts (or lists of texts) first differ, with a little context: the texts themselves are Mastra's
    and are not printed whole."""
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return f"{len(ours)} parts against {len(theirs)}"
        index = next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)
        return f"part {index}: " + _where(ours[index], theirs[index])
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    near = slice(max(0, at - 30), at + 30)
    return f"at {at} of {len(theirs)}: ours {ours[near]!r}, theirs {theirs[near]!r}"


def _compare(cases: Iterator[tuple[Any, Any]]) -> tuple[int, list[str]]:
    count, different = 0, []
    for ours, theirs in cases:
        count += 1
        if ours != theirs:
            different.append(_where(ours, theirs))
    return count, different


GENERATORS: Mapping[str, Callable[[PromptPack, Reference, random.Random], Iterator[tuple[Any, Any]]]] = {
    "observer": observer_cases, "reflector": reflector_cases, "actor": actor_cases,
}


@pytest.mark.parametrize("family", list(GENERATORS))
def test_filled_templates_equal_the_builders(tmp_path_factory: pytest.TempPathFactory, version: str,
                                             family: str) -> None:
    pack = real_pack(tmp_path_factory, version)
    started = time.monotonic()
    with BuilderProcess(real_package(tmp_path_factory, version), RELEASES[version].variants) as builders:
        count, different = _compare(GENERATORS[family](pack, Reference(builders, version), random.Random(SEED)))
    print(f"\n@mastra/memory {version} {family}: {count - len(different)} of {count} identical "
          f"({time.monotonic() - started:.1f} s)")
    assert not different, f"{len(different)} of {count} differ; first: {different[0]}"


def test_system_prompts_of_every_variant_equal_the_builders(tmp_path_factory: pytest.TempPathFactory,
                                                            version: str) -> None:
    release = RELEASES[version]
    with BuilderProcess(real_package(tmp_path_factory, version), release.variants) as builders:
        total = 0
        for variant in release.variants:
            pack = real_pack(tmp_path_factory, version, variant)
            cases = system_cases(pack, Reference(builders, version), random.Random(SEED), variant)
            count, different = _compare(cases)
            total += count
            assert not different, f"{variant}: {len(different)} of {count} differ; first: {different[0]}"
    print(f"\n@mastra/memory {version} system prompts: {total} of {total} identical")
    if len(release.variants) > 1:
        texts = {load_pack(version, cache_dir=cache_base(tmp_path_factory), variant=v)
                 .observer_system_prompt(multi_thread=False) for v in release.variants}
        assert len(texts) == len(release.variants)  # the switch does change the Observer's instructions


def test_the_public_entry_agrees_under_each_variants_environment(tmp_path_factory: pytest.TempPathFactory,
                                                                  version: str) -> None:
    """Independent of om-eval's exporting copy: the package's own entry point, loaded by Node with a variant's
    environment (1.3.0 reads it at load), exports the single-thread Observer prompt the pack has."""
    release = RELEASES[version]
    if release.builders.hint_extractors:
        pytest.skip("from 1.27 the exported default prompt is built without the extractors the engine passes")
    entry = real_package(tmp_path_factory, version) / "dist" / "processors" / "index.js"
    script = (f"const m = await import({json.dumps(entry.as_uri())});"
              "console.log(JSON.stringify(m.OBSERVER_SYSTEM_PROMPT));")
    node_path = shutil.which("node")
    assert node_path is not None
    register = Path(node.__file__).with_name("stub_register.mjs").as_uri()
    for variant, env in release.variants.items():
        environment = {k: v for k, v in os.environ.items() if k not in env}
        environment.update({k: v for k, v in env.items() if v is not None})
        completed = subprocess.run([node_path, "--import", register, "--input-type=module", "-e", script],
                                   capture_output=True, text=True, env=environment, check=True, timeout=120)
        exported = json.loads(completed.stdout.strip().splitlines()[-1])
        pack = real_pack(tmp_path_factory, version, variant)
        assert pack.observer_system_prompt(multi_thread=False) == exported, variant


def test_the_continuation_reminder_is_wrapped_as_the_bundle_wraps_it(tmp_path_factory: pytest.TempPathFactory,
                                                                     version: str) -> None:
    source = find_bundle(real_package(tmp_path_factory, version)).read_text(encoding="utf-8")
    assert "text: `<system-reminder>${OBSERVATION_CONTINUATION_HINT}</system-reminder>`" in source


def test_the_pack_rendered_with_the_real_dependencies_is_the_pinned_one(tmp_path_factory: pytest.TempPathFactory,
                                                                        version: str) -> None:
    release = RELEASES[version]
    folder = node_folder(tmp_path_factory, f"mastra-exact-{version}",
                         {"@mastra/memory": version, **REAL_DEPENDENCIES[version]})
    started = time.monotonic()
    installed = folder.folder / "node_modules" / "@mastra" / "memory"
    with BuilderProcess(installed, release.variants, stubs=False) as builders:
        pack = render.render_pack(builders, release)
    print(f"\n@mastra/memory {version}: rendered with its real dependencies in {time.monotonic() - started:.1f} s")
    assert pack_digest(pack) == release.pack_sha256


def test_a_second_load_needs_neither_node_nor_network(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    first = real_pack(tmp_path_factory, version)
    release = RELEASES[version]
    cached = pack_path(pack_store(cache_base(tmp_path_factory)), release)
    copy = pack_path(pack_store(tmp_path), release)
    copy.parent.mkdir(parents=True)
    shutil.copy(cached, copy)
    monkeypatch.setattr("om_eval.om.exact.node.shutil.which", lambda name: None)
    monkeypatch.setattr(fetch, "download", lambda url, timeout=0: pytest.fail(f"the network was used: {url}"))
    started = time.monotonic()
    second = load_pack(version, cache_dir=tmp_path)
    print(f"\n@mastra/memory {version}: cached pack loaded in {time.monotonic() - started:.2f} s")
    assert second == first


def test_a_tampered_copy_of_the_real_tarball_is_refused(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
                                                        version: str) -> None:
    release = RELEASES[version]
    real_pack(tmp_path_factory, version)
    kept = pack_store(cache_base(tmp_path_factory)) / "tarballs" / f"{fetch.integrity_key(release.integrity)}.tgz"
    data = kept.read_bytes() if kept.is_file() else fetch.download(release.tarball_url)
    tampered = bytearray(data)
    tampered[len(tampered) // 2] ^= 0x01
    source = tmp_path / f"memory-{version}.tgz"
    source.write_bytes(bytes(tampered))
    with pytest.raises(IntegrityError, match=f"not @mastra/memory {version} as published"):
        obtain_package(release, tmp_path / "store", source)
    assert not (tmp_path / "store" / "packages").exists()
