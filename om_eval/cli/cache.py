"""``om-eval cache stats|clear|path``: look inside the LLM response cache, or empty it.

Module-level imports are kept light (no rich, no litellm) so that ``om-eval --help`` stays instant.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from om_eval.llm.cache import CacheStats

__all__ = ["add_parser", "run"]

CACHE_EXAMPLES = """examples:
  om-eval cache path                      # where responses are stored
  om-eval cache stats                     # entries, size, hits, misses, hit rate, dollars saved
  om-eval cache stats --json              # the same as JSON, for scripts
  om-eval cache clear --yes               # remove every entry and reset the counters, no prompt
  om-eval cache stats --dir /shared/om-cache

The default directory is $OM_EVAL_CACHE_DIR/llm, else $XDG_CACHE_HOME/om-eval/llm, else ~/.cache/om-eval/llm.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``cache`` command and its verbs (``stats``, ``clear``, ``path``) to ``subparsers``."""
    cache = subparsers.add_parser(
        "cache",
        help="inspect or empty the LLM response cache",
        description="Inspect or empty the persistent cache of model responses shared by all runs.",
        epilog=CACHE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = cache.add_subparsers(dest="cache_command", metavar="VERB", required=True)
    stats = verbs.add_parser("stats", help="entries, size, hits, misses, hit rate and dollars saved")
    stats.add_argument("--json", action="store_true", help="print the figures as JSON")
    clear = verbs.add_parser("clear", help="remove every entry and reset the hit/miss counters")
    clear.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    verbs.add_parser("path", help="print the cache directory")
    for verb in (stats, clear, verbs.choices["path"]):
        verb.add_argument("--dir", metavar="PATH", help="cache directory (overrides the default, see examples)")
    return cache


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _print_stats(cache_root: str, stats: CacheStats) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"LLM cache  {cache_root}", show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right")
    rate = stats.hit_rate
    saved = f"${stats.dollars_saved:,.4f}"
    if stats.hits_unknown_cost:
        saved += f" (+{stats.hits_unknown_cost:,} hits of unknown price)"
    for name, value in (
        ("entries", f"{stats.entries:,}"),
        ("size", _size(stats.size_bytes)),
        ("hits", f"{stats.hits:,}"),
        ("misses", f"{stats.misses:,}"),
        ("hit rate", "n/a" if rate is None else f"{rate:.1%}"),
        ("dollars saved", saved),
    ):
        table.add_row(name, value)
    Console().print(table)


def run(args: argparse.Namespace) -> int:
    """Run ``om-eval cache <verb>``; returns the exit code (1 when a clear is declined)."""
    from om_eval.llm.cache import ResponseCache

    cache = ResponseCache(args.dir)
    if args.cache_command == "path":
        print(cache.root)
        return 0
    if args.cache_command == "stats":
        stats = cache.stats()
        if args.json:
            print(json.dumps({"root": str(cache.root), **stats.to_dict()}, indent=2))
        else:
            _print_stats(str(cache.root), stats)
        return 0
    if args.cache_command == "clear":
        if not args.yes:
            entries = cache.stats().entries
            try:
                answer = input(f"Remove {entries:,} cached responses from {cache.root}? [y/N] ")
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                print("Nothing removed.")
                return 1
        removed = cache.clear()
        print(f"Removed {removed:,} cached responses from {cache.root}.")
        return 0
    print(f"unknown cache command {args.cache_command!r}", file=sys.stderr)
    return 2
