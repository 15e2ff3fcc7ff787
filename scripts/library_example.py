"""The README's library example: one message through OM with the scripted model, then the actor's view."""

import asyncio
from datetime import datetime

from om_eval.llm.scripted.model import ScriptedModel
from om_eval.om import Message, ObservationalMemory, ObservationConfig, OMConfig

config = OMConfig(scope="resource", observation=ObservationConfig(message_tokens=30_000))
memory = ObservationalMemory(config, observer=ScriptedModel(), resource_id="user-1")

async def chat():
    memory.add_message(Message("m1", "thread-1", "user", "I adopted a beagle named Toby.", datetime(2025, 3, 1, 9)))
    await memory.observe(force=True)
    context = memory.build_context(now=datetime(2025, 3, 20), thread_id="thread-2")
    return context.messages

for message in asyncio.run(chat()):
    print(f"--- {message['role']}\n{message['content']}")
