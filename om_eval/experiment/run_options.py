"""The ``run`` options of an experiment (a module of their own so the schema can be made from them)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from om_eval.om.config import ConfigError


@dataclass(frozen=True)
class RunOptions:
    """The ``run`` config group: how a run is carried out, never what it computes (none of it is in the run id)."""

    results_dir: str = "results"
    """Where run stores (``store/``), exports (``runs/``) and locks go."""
    concurrency: int = 4
    """Questions worked on at a time."""
    budget_usd: float | None = None
    """Stop scheduling questions once this much has been spent (questions in flight finish)."""
    progress: bool = True
    """Show the live progress display."""
    label: str | None = None
    """A short name for this variant in reports (default: the overrides that define it)."""
    cache_dir: str | None = None
    """The model-answer cache (default: $OM_EVAL_CACHE_DIR/llm or ~/.cache/om-eval/llm)."""
    question_timeout_s: float | None = None
    """Longest a memory system's ``ingest``, ``restore`` or ``context`` call may take, in seconds (each call on its
    own); a call over it makes its question an error, retried on resume. ``None``: no limit."""
    max_context_tokens: int | None = None
    """Most tokens of memory a system may put before the actor (counted with the run's tokenizer); more makes the
    question an error naming the size. The actor's own window (litellm's list) is always a limit. ``None``: only
    that."""
    turn_costs: bool = True
    """Record, while each memory is built, what an agent would send at every user turn (``items.turns``: the
    turn-by-turn cost replay of ``om-eval report``). No model call; off saves its counting."""

    def __post_init__(self) -> None:
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise ConfigError(f"run.concurrency={self.concurrency!r} is invalid: must be a whole number >= 1")
        if self.budget_usd is not None and not (isinstance(self.budget_usd, (int, float))
                                                and math.isfinite(self.budget_usd) and self.budget_usd >= 0):
            raise ConfigError(f"run.budget_usd={self.budget_usd!r} is invalid: must be >= 0 (or null for no budget)")
        cap = self.max_context_tokens
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ConfigError(f"run.max_context_tokens={cap!r} is invalid: must be a whole number >= 1 (or null)")
        timeout = self.question_timeout_s
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not math.isfinite(timeout) or timeout <= 0):
            raise ConfigError(f"run.question_timeout_s={timeout!r} is invalid: must be a number of seconds > 0 (or "
                              "null for no limit)")
