"""The docs' library example: one message through OM with the scripted model, then what it observed and what an
actor on another thread would see."""

import asyncio
from datetime import datetime

from om_eval.om import Message, ObservationalMemory, ObservationConfig, OMConfig
from om_eval.testing.scripted import ScriptedModel

config = OMConfig(scope="resource", observation=ObservationConfig(message_tokens=30_000))
memory = ObservationalMemory(config, observer=ScriptedModel(), resource_id="user-1")


async def chat() -> list[dict[str, str]]:
    memory.add_message(Message("m1", "thread-1", "user", "I adopted a beagle named Toby.", datetime(2025, 3, 1, 9)))
    await memory.observe(force=True)  # observe now, whatever the threshold (a final flush)
    context = memory.build_context(now=datetime(2025, 3, 20), thread_id="thread-2")
    return context.messages


messages = asyncio.run(chat())
print("=== observations")
print(memory.observations())
print("=== what an actor on thread-2 sees")
for message in messages:
    print(f"--- {message['role']}\n{message['content']}")
