"""``om-eval demo``: a conversation through OM with the scripted model, shown with rich."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import timedelta
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from om_eval.demo import make_conversation
from om_eval.om.config import ConfigError, ObservationConfig, OMConfig, ReflectionConfig
from om_eval.om.memory import ObservationalMemory
from om_eval.om.scripted import ScriptedModel


def _config(args: argparse.Namespace) -> OMConfig:
    return OMConfig(
        scope=args.scope,
        prompt_variant=args.variant,
        obscure_thread_ids=True,
        observation=ObservationConfig(
            message_tokens=args.message_tokens, max_tokens_per_batch=args.batch_tokens, buffer_tokens=False
        ),
        reflection=ReflectionConfig(observation_tokens=args.observation_tokens),
    )


async def _ingest(memory: ObservationalMemory, args: argparse.Namespace, console: Console) -> None:
    sessions = make_conversation(args.sessions, args.pairs, seed=args.seed)
    columns = (TextColumn("[bold]ingesting"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("", total=len(sessions))
        for session in sessions:
            for start in range(0, len(session.messages), 2):
                memory.add_messages(session.messages[start : start + 2])
                await memory.observe(session.thread_id)
            record = memory.record(session.thread_id)
            progress.update(
                task, advance=1,
                description=f"pending {memory.pending_tokens(session.thread_id):>6} tok · observations "
                f"{record.observation_token_count:>6} tok · generation {record.generation_count}",
            )


def _summary(memory: ObservationalMemory) -> Table:
    table = Table(title="What the memory did")
    table.add_column("event")
    table.add_column("count", justify="right")
    table.add_column("model calls", justify="right")
    table.add_column("detail")
    kinds: dict[str, list] = {}
    for event in memory.events:
        kinds.setdefault(event.kind, []).append(event)
    for kind, events in kinds.items():
        detail = ""
        if kind == "reflection":
            detail = "levels " + ", ".join("→".join(map(str, e.levels)) for e in events)
        table.add_row(kind, str(len(events)), str(sum(e.calls for e in events)), detail)
    return table


def run_demo(args: argparse.Namespace) -> int:
    console = Console()
    try:
        config = _config(args)
    except ConfigError as error:
        console.print(f"[red]invalid option:[/red] {error}")
        return 2
    memory = ObservationalMemory(config, observer=ScriptedModel(), resource_id="demo-user")
    asyncio.run(_ingest(memory, args, console))
    console.print(_summary(memory))
    thread = None if config.scope == "resource" else memory.thread_ids[-1]
    record = memory.record(thread)
    console.print(
        f"token estimator {memory.counter.name} · active observations {record.observation_token_count} tokens · "
        f"{len(memory.generations(thread))} generation(s) · unobserved {memory.pending_tokens(thread)} tokens"
    )
    now = record.updated_at + timedelta(days=1)  # "the next day": relative dates read naturally
    context = memory.build_context(now, thread)
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
