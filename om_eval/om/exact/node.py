"""Running the package's own builders under Node: the one place om-eval starts Node for ``prompt=mastra_exact``.

Why a copy of the bundle: the Reflector's builders, the Observer's task and multi-thread builders and
``COMPRESSION_GUIDANCE`` are not exported by the package's entry points, only declared at the top of its bundle
file. om-eval writes a copy of that file next to it (``om-eval-<name>.mjs``, so its relative imports still
resolve) with one line appended that exports those names under an ``om_eval_`` prefix. Nothing of the package is
changed or stored in om-eval; the copy lives in the cache beside the verified package.

Why stubs: the bundle imports ``@mastra/core``, ``zod`` and more at load time. With ``stubs=True`` (the default)
those imports resolve to inert stand-ins (``stub_hooks.mjs``), so rendering needs the verified tarball and Node,
not an ``npm install``; the tests check that the texts equal those rendered with the real dependencies.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

from om_eval.common.files import atomic_write
from om_eval.om.exact.errors import NodeMissingError, RenderError
from om_eval.om.exact.fetch import OWN_FILE_PREFIX

#: Names the copy exports when the bundle declares them at its top level (each release has a subset).
EXPORTED_NAMES = (
    "buildObserverSystemPrompt", "buildObserverPrompt", "buildMultiThreadObserverPrompt", "buildObserverTaskPrompt",
    "buildMultiThreadObserverTaskPrompt", "buildObserverHistoryMessage", "buildMultiThreadObserverHistoryMessage",
    "formatMessagesForObserver", "formatMultiThreadMessagesForObserver", "buildReflectorSystemPrompt",
    "buildReflectorPrompt", "COMPRESSION_GUIDANCE", "OBSERVATION_CONTEXT_PROMPT", "OBSERVATION_CONTEXT_INSTRUCTIONS",
    "OBSERVATION_CONTINUATION_HINT", "OBSERVATION_RETRIEVAL_INSTRUCTIONS", "getRetrievalInstructions",
    "ObservationalMemory", "injectAnchorIds", "stripObservationGroups", "renderObservationGroupsForReflection",
    "composeObservationExtractors", "composeReflectionExtractors", "resolveExtractors",
)
#: The function every release's bundle declares: it tells which file holds the builders.
BUNDLE_MARK = "function buildReflectorPrompt("
REPLY_PREFIX = "\x1eom-eval "
#: ``module.register``, which loads the stand-ins, came with Node 20.6.
MIN_NODE = (20, 6)
#: A whole rendering takes seconds; a process still running after this is stopped.
PROCESS_TIMEOUT_S = 600
#: Environment variables that change what the package does when it loads; the process gets none of them.
_SCRUBBED = ("NODE_OPTIONS", "OM_DEBUG", "OM_USE_LEGACY_PROMPT", "OM_USE_CONDENSED_PROMPT", "OM_REPRO_CAPTURE")


def find_node() -> str:
    """The ``node`` executable; raises :class:`NodeMissingError` with the one-line reason."""
    node = shutil.which("node")
    if node is None:
        raise NodeMissingError(
            "prompt=mastra_exact needs Node.js (node >= 20.6 on PATH) to render Mastra's prompts once; none was "
            "found and no rendered pack is in the cache"
        )
    return node


def node_version(node: str) -> tuple[int, ...]:
    """``node --version`` as numbers (``(22, 13, 0)``); ``()`` when it cannot be read."""
    completed = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    found = re.match(r"v(\d+)\.(\d+)\.(\d+)", completed.stdout.strip())
    return tuple(int(n) for n in found.groups()) if found else ()


def find_bundle(package_root: Path) -> Path:
    """The ES module file of ``dist/`` that declares the builders."""
    found = [
        path for path in sorted((package_root / "dist").glob("*.js"))
        if BUNDLE_MARK in path.read_text(encoding="utf-8", errors="replace")
    ]
    if len(found) != 1:
        raise RenderError(f"expected one file of {package_root / 'dist'} to declare the builders, found {len(found)}")
    return found[0]


def declared(source: str, name: str) -> bool:
    """Whether ``source`` declares ``name`` at its top level (a function, class or variable)."""
    pattern = rf"^(?:async\s+)?(?:function\*?\s+{name}\s*\(|(?:var|let|const|class)\s+{name}\b)"
    return re.search(pattern, source, flags=re.MULTILINE) is not None


def write_exporting_copy(bundle: Path) -> Path:
    """``om-eval-<bundle>.mjs`` beside ``bundle``: its text and an export line for :data:`EXPORTED_NAMES`."""
    source = bundle.read_text(encoding="utf-8")
    names = [name for name in EXPORTED_NAMES if declared(source, name)]
    line = "export { " + ", ".join(f"{name} as om_eval_{name}" for name in names) + " };\n"
    copy = bundle.with_name(f"{OWN_FILE_PREFIX}{bundle.stem}.mjs")
    text = source if source.endswith("\n") else source + "\n"
    atomic_write(copy, text + line)
    return copy


def _script(name: str) -> Path:
    return Path(str(resources.files("om_eval.om.exact").joinpath(name)))


def _environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in _SCRUBBED}
    env["TZ"] = "UTC"
    return env


class BuilderProcess:
    """A Node process answering calls to one package's builders (one request at a time).

    Args:
        package_root: the verified package folder (holding ``package.json`` and ``dist/``).
        variants: the environment each prompt variant is loaded under (:attr:`~om_eval.om.exact.pins.Release.variants`).
        stubs: load the package with stand-ins for its dependencies; ``False`` needs them installed around it.
    """

    def __init__(self, package_root: Path, variants: Mapping[str, Mapping[str, str | None]], *,
                 stubs: bool = True) -> None:
        self.node = find_node()
        version = node_version(self.node)
        if version < MIN_NODE:
            shown = ".".join(map(str, version)) or "an unreadable version"
            raise NodeMissingError(f"prompt=mastra_exact needs Node.js >= 20.6 to render Mastra's prompts; "
                                   f"{self.node} is {shown}")
        copy = write_exporting_copy(find_bundle(package_root))
        command = [self.node]
        if stubs:
            command += ["--import", _script("stub_register.mjs").as_uri()]
        command += [str(_script("builders.mjs")), str(copy), json.dumps(variants)]
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close(), with the process)
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, cwd=package_root,
            env=_environment(), text=True, encoding="utf-8",
        )
        self._next_id = 0
        self._timed_out = False
        self._watchdog = threading.Timer(PROCESS_TIMEOUT_S, self._expire)
        self._watchdog.daemon = True
        self._watchdog.start()

    def __enter__(self) -> BuilderProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def _expire(self) -> None:
        self._timed_out = True
        self._process.kill()

    def close(self) -> None:
        self._watchdog.cancel()
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._stderr.close()

    def _failure(self, what: str) -> RenderError:
        self._stderr.seek(0)
        tail = self._stderr.read().decode("utf-8", errors="replace")[-1500:]
        if self._timed_out:
            what += f" (stopped after {PROCESS_TIMEOUT_S} s)"
        return RenderError(f"the Node builder process {what}: {tail.strip() or '(no output)'}")

    def request(self, request: Mapping[str, Any]) -> Any:
        """Send one request (see ``builders.mjs``) and return its answer; a thrown error is a :class:`RenderError`."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._next_id += 1
        try:
            self._process.stdin.write(json.dumps({**request, "id": self._next_id}) + "\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            raise self._failure("stopped") from None
        while True:
            line = self._process.stdout.readline()
            if not line:
                raise self._failure("stopped")
            if line.startswith(REPLY_PREFIX):
                break
        reply = json.loads(line[len(REPLY_PREFIX):])
        if "error" in reply:
            raise RenderError(f"{request.get('call') or request.get('method') or request.get('get')}: {reply['error']}")
        return reply.get("ok")

    def call(self, name: str, *args: Any, variant: str = "current") -> Any:
        """A function of the package (by its name in the bundle)."""
        return self.request({"variant": variant, "call": name, "args": list(args)})

    def method(self, name: str, self_fields: Mapping[str, Any], *args: Any, variant: str = "current") -> Any:
        """A method of ``ObservationalMemory`` on a bare instance with ``self_fields`` set."""
        return self.request({"variant": variant, "method": name, "self": dict(self_fields), "args": list(args)})

    def get(self, name: str, variant: str = "current") -> Any:
        """A value the bundle declares (a constant)."""
        return self.request({"variant": variant, "get": name})

    def names(self, variant: str = "current") -> list[str]:
        """The names the copy exports."""
        return list(self.request({"variant": variant, "names": True}))


UNDEFINED: Mapping[str, bool] = {"$undefined": True}


def js_optional(value: Any) -> Any:
    """``value``, or JavaScript's ``undefined`` for ``None``."""
    return UNDEFINED if value is None else value
