"""Token counting for thresholds (om-reference §5).

Why pluggable: OM's thresholds are compared against *estimated* tokens, and the estimator changed across
Mastra releases (js-tiktoken ``o200k_base`` up to 1.6, the ``tokenx`` heuristic from 1.7, :mod:`om_eval.om.js.tokenx`).
The trigger points, and therefore the scores, depend on which one ran, so every memory records the estimator's name.

``o200k_base`` must work with no network: tiktoken normally downloads its BPE file, but litellm's wheel ships
it, so we point ``TIKTOKEN_CACHE_DIR`` at that folder without importing litellm (which is slow to import).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from om_eval.om.js.tokenx import VERSION as TOKENX_VERSION
from om_eval.om.js.tokenx import TokenxCounter
from om_eval.om.thresholds import js_round

#: Fixed overhead per message (role markers and separators), as in the reference.
TOKENS_PER_MESSAGE = 3.8
#: Fixed overhead per conversation, added once to a non-empty message list.
TOKENS_PER_CONVERSATION = 24
#: JSON punctuation compensation for structured tool arguments and results.
JSON_OBJECT_ADJUSTMENT = -12


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that turns text into a token count. ``name`` is recorded with every memory."""

    name: str

    def count_text(self, text: str) -> int: ...


class TokenizerUnavailableError(RuntimeError):
    """The tiktoken encoding file cannot be found offline."""


def _litellm_tokenizer_dir() -> str | None:
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    folder = os.path.join(os.path.dirname(spec.origin), "litellm_core_utils", "tokenizers")
    return folder if os.path.isdir(folder) else None


@lru_cache(maxsize=4)
def _load_encoding(name: str) -> Any:
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        folder = _litellm_tokenizer_dir()
        if folder is not None:
            os.environ["TIKTOKEN_CACHE_DIR"] = folder
    import tiktoken

    try:
        return tiktoken.get_encoding(name)
    except Exception as error:  # tiktoken raises requests/urllib errors when it tries to download
        raise TokenizerUnavailableError(
            f"tiktoken encoding {name!r} is not available offline ({error.__class__.__name__}). "
            "Install litellm (its wheel ships the o200k_base file) or set TIKTOKEN_CACHE_DIR to a folder that "
            "holds it; or choose the 'chars' estimator."
        ) from error


#: Where a long text may be cut so that its token count is the sum of its pieces' counts: after a line break
#: whose next line starts with neither whitespace nor ``/``. Why that holds for tiktoken's encodings: BPE merges
#: stay within the pieces its split pattern finds, and no piece runs from a line break into such a character
#: (only whitespace, further breaks and, after punctuation, ``/`` can follow a break inside one piece); special
#: tokens hold no line break. ``tests/om/test_tokens.py`` checks it against whole-text counts. The split consumes
#: the break (a lookbehind tried at every position was four times slower); each piece but the last is counted with it.
_ADDITIVE_CUT = re.compile(r"\n(?=[^\s/])")
#: The encodings whose split patterns were checked for that; others are always counted whole.
PIECEWISE_ENCODINGS = ("o200k_base", "cl100k_base")


class TiktokenCounter:
    """Exact BPE counts with tiktoken (default ``o200k_base``, what the benchmark-era OM used)."""

    #: Texts (and pieces of long texts) up to this many characters have their counts remembered, until they
    #: hold this many characters in all; then the memory starts afresh. Why a bound in characters: a haystack's
    #: messages are counted once and never again, and remembering all of an S run's pieces cost 90 MB.
    REMEMBERED_CHARS = 400
    REMEMBERED_TOTAL_CHARS = 4_000_000

    def __init__(self, encoding: str = "o200k_base") -> None:
        self.encoding_name = encoding
        self.name = f"tiktoken/{encoding}"
        self._encoding = _load_encoding(encoding)
        self._remembered: dict[str, int] = {}
        #: Pieces of long texts that ended with a line break, by their text without it.
        self._remembered_broken: dict[str, int] = {}
        self._remembered_chars = 0

    def count_text(self, text: str) -> int:
        """Tokens in ``text``. A long text is counted as the sum of its line pieces (:data:`_ADDITIVE_CUT`), each
        remembered: observations are counted again and again as they grow by a few lines, and the Observer's
        truncation counts candidates rebuilt from the same lines, so nearly every piece is already known."""
        if len(text) <= self.REMEMBERED_CHARS:
            # The common case (a line, a message) answered here, without a further call.
            known = self._remembered.get(text)
            return known if known is not None else self._count_piece(text)
        if self.encoding_name not in PIECEWISE_ENCODINGS:
            return self._count_piece(text)
        pieces = _ADDITIVE_CUT.split(text)
        last = pieces.pop()
        known = self._remembered.get(last)
        total = known if known is not None else self._count_piece(last)
        broken = self._remembered_broken
        for piece in pieces:
            known = broken.get(piece)
            total += known if known is not None else self._count_broken(piece)
        return total

    def exceeds(self, text: str, limit: int) -> bool:
        """Whether ``text`` holds more than ``limit`` tokens, reading only as much of its end as that takes.

        Exact: the text's count is the sum of its line pieces' (:data:`_ADDITIVE_CUT`), so a suffix starting at a
        cut that already holds more than ``limit`` settles it. The Observer's 2k-token view of a 40k-token memory
        is decided from its last few thousand characters."""
        if self.encoding_name in PIECEWISE_ENCODINGS:
            window = 6 * max(limit, 1)
            while window < len(text):
                cut = _ADDITIVE_CUT.search(text, len(text) - window)
                if cut is not None and self.count_text(text[cut.end():]) > limit:
                    return True
                window *= 2
        return self.count_text(text) > limit

    def _count_broken(self, piece: str) -> int:
        """Tokens of ``piece`` followed by its line break, remembered under ``piece`` itself (no new string to
        hash on the next count)."""
        count = self._encoded_length(piece + "\n")  # not remembered a second time, as _count_piece would
        if len(piece) < self.REMEMBERED_CHARS:
            self._make_room()
            self._remembered_broken[piece] = count
            self._remembered_chars += len(piece)
        return count

    def _encoded_length(self, text: str) -> int:
        # 'all' special tokens allowed, like the reference's encode(text, 'all').
        return len(self._encoding.encode(text, allowed_special="all"))

    def _make_room(self) -> None:
        if self._remembered_chars >= self.REMEMBERED_TOTAL_CHARS:
            self._remembered.clear()
            self._remembered_broken.clear()
            self._remembered_chars = 0

    def _count_piece(self, text: str) -> int:
        if not text:
            return 0
        short = len(text) <= self.REMEMBERED_CHARS
        if short and (known := self._remembered.get(text)) is not None:
            return known
        count = self._encoded_length(text)
        if short:
            self._make_room()
            self._remembered[text] = count
            self._remembered_chars += len(text)
        return count


class CharRatioCounter:
    """A fast heuristic: characters divided by a ratio (4 approximates ``tokenx`` used by 1.7+)."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if chars_per_token <= 0:
            raise ValueError(f"chars_per_token={chars_per_token!r} is invalid: must be > 0")
        self.chars_per_token = chars_per_token
        self.name = f"chars/{chars_per_token:g}"

    def count_text(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)


ESTIMATORS = ("tiktoken", "tokenx", "chars")


def make_counter(name: str = "tiktoken") -> TokenCounter:
    """Build a counter by name: ``tiktoken`` (o200k_base), ``tiktoken/<encoding>``, ``tokenx`` (Mastra 1.7+'s
    estimate, :mod:`om_eval.om.js.tokenx`), ``chars`` or ``chars/<r>``."""
    kind, _, arg = name.partition("/")
    if kind == "tiktoken":
        return TiktokenCounter(arg or "o200k_base")
    if kind == "tokenx" and arg in ("", TOKENX_VERSION):
        return TokenxCounter()
    if kind == "chars":
        return CharRatioCounter(float(arg) if arg else 4.0)
    raise ValueError(f"token estimator {name!r} is unknown: use one of tiktoken, tiktoken/<encoding>, tokenx, chars, "
                     "chars/<r>")


@lru_cache(maxsize=1)
def default_counter() -> TokenCounter:
    """The process-wide default: tiktoken ``o200k_base``."""
    return TiktokenCounter()


def over_limit(counter: TokenCounter) -> Callable[[str, int], bool]:
    """``counter``'s test of "more than this many tokens": its own ``exceeds(text, limit)`` when it has one (it
    can stop early; a counter's ``exceeds`` must mean exactly ``count_text(text) > limit``), else a whole count."""
    own: Callable[[str, int], bool] | None = getattr(counter, "exceeds", None)
    if callable(own):
        return own
    return lambda text, limit: counter.count_text(text) > limit


def count_text(text: str, counter: TokenCounter | None = None) -> int:
    """Tokens in ``text`` (``o200k_base`` unless another counter is given)."""
    return (counter or default_counter()).count_text(text)


def _field(message: Any, name: str, default: Any = None) -> Any:
    if isinstance(message, Mapping):
        return message.get(name, default)
    return getattr(message, name, default)


def _count_part(part: Mapping[str, Any], counter: TokenCounter) -> float:
    kind = part.get("type", "text")
    if kind == "text":
        return counter.count_text(str(part.get("text", "")))
    if kind == "tool-call":
        args = part.get("args", {})
        if isinstance(args, str):
            return counter.count_text(str(part.get("tool_name", ""))) + counter.count_text(args)
        return (
            counter.count_text(str(part.get("tool_name", "")))
            + counter.count_text(json.dumps(args, ensure_ascii=False))
            + JSON_OBJECT_ADJUSTMENT
        )
    if kind == "tool-result":
        result = part.get("result", "")
        if isinstance(result, str):
            return counter.count_text(result) + TOKENS_PER_MESSAGE
        serialised = json.dumps(result, ensure_ascii=False, indent=2)
        return counter.count_text(serialised) + TOKENS_PER_MESSAGE + JSON_OBJECT_ADJUSTMENT
    if kind.startswith("data-") or kind == "reasoning":
        return 0  # UI markers and hidden reasoning never reach the model (1.9+ rule)
    return counter.count_text(json.dumps(dict(part), ensure_ascii=False, default=str))


def count_message(message: Any, counter: TokenCounter | None = None) -> int:
    """Tokens of one message: role + payload + a fixed 3.8 overhead, rounded half up.

    ``message`` is a mapping or an object with ``role`` and ``content``; content is text or a list of parts
    (``{"type": "text"|"tool-call"|"tool-result"|...}``).
    """
    counter = counter or default_counter()
    role = str(_field(message, "role", "user"))
    content = _field(message, "content", "")
    if isinstance(content, str):
        payload: float = counter.count_text(content)
    else:
        payload = sum(_count_part(part, counter) for part in content)
    return js_round(counter.count_text(role) + payload + TOKENS_PER_MESSAGE)


def count_messages(messages: Iterable[Any], counter: TokenCounter | None = None) -> int:
    """Tokens of a message list: 24 per conversation plus each message; 0 for an empty list."""
    counter = counter or default_counter()
    counts = [count_message(m, counter) for m in messages]
    if not counts:
        return 0
    return TOKENS_PER_CONVERSATION + sum(counts)
