"""``om-eval demo``: a synthetic conversation through OM, every model call through the litellm client."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from om_eval.data.conversation import make_conversation
from om_eval.om.config import (
    PARAPHRASE_VARIANTS,
    ConfigError,
    ModelSettings,
    ObservationConfig,
    OMConfig,
    PromptVariant,
    ReflectionConfig,
)
from om_eval.om.memory import ObservationalMemory

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from om_eval.llm import LLMClient

DEMO_EXAMPLES = """examples:
  om-eval demo                                  # the local model (needs om-eval[local]), a short conversation
  om-eval demo --model scripted                 # 24 sessions with the offline scripted model, in seconds
  om-eval demo --model scripted --variant legacy --message-tokens 4000 --observation-tokens 3000
  om-eval demo --model openai/gpt-4o-mini --show-context     # any litellm model id (needs its API key)
  om-eval demo --model scripted --scope thread --save-snapshot results/demo-memory.json
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    demo = commands.add_parser(
        "demo",
        help="feed a synthetic multi-session conversation through Observational Memory",
        description="Feed a seeded synthetic conversation through OM with the offline scripted model and show "
        "what the memory did: observations, reflections, token counts and the actor's context.",
        epilog=DEMO_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--model", default="local",
                      help="a model config (local, scripted, gpt-4o-mini, ...) or a litellm model id")
    demo.add_argument("--sessions", type=int, help="number of sessions (local: 3, otherwise 24)")
    demo.add_argument("--pairs", type=int, help="user/assistant pairs per session (local: 3, otherwise 6)")
    demo.add_argument("--seed", type=int, default=7, help="seed of the synthetic conversation")
    demo.add_argument("--scope", choices=("resource", "thread"), default="resource")
    demo.add_argument("--variant", choices=PARAPHRASE_VARIANTS,
                      help="observer prompt variant (local: condensed, otherwise current)")
    demo.add_argument("--message-tokens", type=int, help="observation threshold (local: 1200, otherwise 6000)")
    demo.add_argument("--observation-tokens", type=int, help="reflection threshold (local: 1500, otherwise 3000)")
    demo.add_argument("--batch-tokens", type=int, help="max tokens per observer batch")
    demo.add_argument("--cache-dir", help="model-answer cache folder (default: om-eval cache path)")
    demo.add_argument("--no-cache", action="store_true", help="call the model even for answers already cached")
    demo.add_argument("--show-context", action="store_true", help="print the actor's full context at the end")
    demo.add_argument("--save-snapshot", metavar="PATH", help="write the memory snapshot as JSON")


@dataclass(frozen=True)
class DemoSize:
    """How much conversation to feed, at which thresholds, with which observer prompt."""

    variant: PromptVariant
    sessions: int
    pairs: int
    message_tokens: int
    observation_tokens: int
    batch_tokens: int


#: A real local model reads ~60 tokens/s on 2 cores, so its demo is small enough to finish in minutes.
#: The condensed prompt (~1.6k tokens against ~3.5k) halves its time and keeps the 1.5B model on format.
LOCAL_SIZE = DemoSize("condensed", sessions=3, pairs=3, message_tokens=1200, observation_tokens=1500, batch_tokens=1200)
SCRIPTED_SIZE = DemoSize("current", sessions=24, pairs=6, message_tokens=6000, observation_tokens=3000,
                         batch_tokens=4000)


def _size(args: argparse.Namespace, model: ModelSettings) -> DemoSize:
    base = LOCAL_SIZE if model.model.startswith("local/") else SCRIPTED_SIZE
    chosen = {name: getattr(args, name) for name in DemoSize.__dataclass_fields__}
    return DemoSize(**{name: base.__dict__[name] if value is None else value for name, value in chosen.items()})


def _config(args: argparse.Namespace, model: ModelSettings, size: DemoSize) -> OMConfig:
    return OMConfig(
        scope=args.scope,
        prompt_variant=size.variant,
        obscure_thread_ids=True,
        observation=ObservationConfig(
            message_tokens=size.message_tokens, max_tokens_per_batch=size.batch_tokens, buffer_tokens=False,
            model=model,
        ),
        reflection=ReflectionConfig(observation_tokens=size.observation_tokens, model=model),
    )


def _status(memory: ObservationalMemory, client: LLMClient, thread: str | None) -> str:
    totals = client.ledger.totals()
    record = memory.record(thread)
    return (
        f"pending {memory.pending_tokens(thread):>6} tok · observations {record.observation_token_count:>5} tok · "
        f"calls {totals.calls} ({totals.cached} cached) · {totals.prompt_tokens + totals.completion_tokens} tok"
    )


async def _ingest(memory: ObservationalMemory, client: LLMClient, size: DemoSize, seed: int, console: Console) -> None:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    sessions = make_conversation(size.sessions, size.pairs, seed=seed)
    columns = (TextColumn("[bold]ingesting"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
               TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("", total=size.sessions * size.pairs)
        for session in sessions:
            thread = None if memory.resource_scope else session.thread_id
            for start in range(0, len(session.messages), 2):
                memory.add_messages(session.messages[start : start + 2])
                progress.update(task, description=_status(memory, client, thread) + " · observing…")
                await memory.observe(session.thread_id)
                progress.update(task, advance=1, description=_status(memory, client, thread))


def _summary(memory: ObservationalMemory, client: LLMClient) -> Table:
    from rich.table import Table

    table = Table(title="What the memory did")
    for column in ("event", "count", "model calls", "detail"):
        table.add_column(column, justify="right" if column in ("count", "model calls") else "left")
    kinds: dict[str, list] = {}
    for event in memory.events:
        kinds.setdefault(event.kind, []).append(event)
    for kind, events in kinds.items():
        detail = "levels " + ", ".join("→".join(map(str, e.levels)) for e in events) if kind == "reflection" else ""
        table.add_row(kind, str(len(events)), str(sum(e.calls for e in events)), detail)
    totals = client.ledger.totals()
    table.caption = (
        f"{totals.calls} model calls, {totals.cached} from cache, {totals.retries} retries, "
        f"{totals.prompt_tokens:,} prompt + {totals.completion_tokens:,} completion tokens, "
        f"${totals.cost_usd:.4f}"
    )
    return table


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    console = Console()
    from om_eval.llm import ClientSettings, LLMCallError, LLMClient
    from om_eval.llm.cache import ResponseCache
    from om_eval.llm.models import model_settings

    try:
        model = model_settings(args.model)
        size = _size(args, model)
        config = _config(args, model, size)
    except ConfigError as error:
        console.print(f"[red]invalid option:[/red] {error}")
        return 2
    cache = None if args.no_cache else ResponseCache(args.cache_dir)
    client = LLMClient(cache=cache, settings=ClientSettings(default_concurrency=4))
    memory = ObservationalMemory(config, observer=client, resource_id="demo-user")
    console.print(
        f"model [bold]{model.model}[/bold] · {size.sessions} sessions x {size.pairs} pairs · observe at "
        f"{size.message_tokens} tokens, reflect above {size.observation_tokens} · prompt variant {size.variant}"
        + (f" · cache {cache.root}" if cache else " · no cache")
    )
    started = time.perf_counter()
    try:
        asyncio.run(_ingest(memory, client, size, args.seed, console))
    except LLMCallError as error:
        console.print(f"[red]model call failed:[/red] {error}")
        return 1
    finally:
        if cache is not None:
            cache.close()
    console.print(_summary(memory, client))
    thread = None if config.scope == "resource" else memory.thread_ids[-1]
    record = memory.record(thread)
    console.print(
        f"{time.perf_counter() - started:.1f} s · token estimator {memory.counter.name} · active observations "
        f"{record.observation_token_count} tokens · {len(memory.generations(thread))} generation(s) · "
        f"unobserved {memory.pending_tokens(thread)} tokens"
    )
    context = memory.build_context(record.updated_at + timedelta(days=1), thread)
    if args.show_context:
        for message in context.messages:
            console.rule(message["role"])
            console.print(message["content"], markup=False, highlight=False)
    else:
        console.print(f"actor context: {len(context.messages)} messages (use --show-context to print them)")
    if args.save_snapshot:
        path = Path(args.save_snapshot)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(memory.snapshot(), ensure_ascii=False, indent=1), encoding="utf-8")
        console.print(f"snapshot written to {path}")
    return 0
