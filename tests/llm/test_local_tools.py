"""Tool calls for the local model: written into a plain chat prompt and read back out of its reply."""

from __future__ import annotations

import json

from om_eval.llm.local_models import format_chatml
from om_eval.llm.local_tools import read_calls, with_tools

TOOL = {"type": "function", "function": {"name": "recall", "parameters": {"type": "object", "properties": {}}}}


def test_tools_are_offered_in_the_system_message_and_the_exchange_is_written_as_turns() -> None:
    messages = [
        {"role": "system", "content": "Be helpful."},
        {"role": "user", "content": "What did I say?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "recall", "arguments": '{"mode":"threads"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"threads":"none"}'},
    ]
    written = with_tools(messages, [TOOL])
    assert written[0]["content"].startswith("Be helpful.\n\n# Tools") and json.dumps(TOOL) in written[0]["content"]
    assert written[2]["content"] == '<tool_call>\n{"name": "recall", "arguments": {"mode": "threads"}}\n</tool_call>'
    assert written[3] == {"role": "user", "content": '<tool_response>\n{"threads":"none"}\n</tool_response>'}
    prompt = format_chatml(written)  # a plain ChatML prompt: no tool role left
    assert prompt.endswith("<|im_start|>assistant\n") and "<|im_start|>tool" not in prompt


def test_calls_are_read_back_with_stable_ids_and_junk_is_passed_on() -> None:
    reply = 'Let me look.\n<tool_call>\n{"name": "recall", "arguments": {"cursor": "ab"}}\n</tool_call>\n' \
            '<tool_call>\n{"name": "recall", "arguments": {"page": -1}}\n</tool_call>'
    head, calls = read_calls(reply)
    assert head == "Let me look."
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [{"cursor": "ab"}, {"page": -1}]
    assert read_calls(reply)[1] == calls and calls[0]["id"] != calls[1]["id"]
    head, calls = read_calls("<tool_call>\n{not json")  # cut off by the output cap
    assert head == "" and calls[0]["function"] == {"name": "", "arguments": "{not json"}
    assert read_calls("plain answer") == ("plain answer", [])


def test_a_reply_of_bare_call_objects_counts_when_it_names_an_offered_tool() -> None:
    # llama.cpp drops the model's <tool_call> tags (special tokens) from the text it returns.
    head, calls = read_calls('{"name": "recall", "arguments": {"mode": "threads"}}', ["recall"])
    assert head == "" and json.loads(calls[0]["function"]["arguments"]) == {"mode": "threads"}
    fenced = '```json\n{"name": "recall", "arguments": {}}\n{"name": "recall", "arguments": {"page": 2}}\n```'
    assert len(read_calls(fenced, ["recall"])[1]) == 2
    assert read_calls('{"name": "other", "arguments": {}}', ["recall"])[1] == []
    prose = 'Use it like this: {"name": "recall", "arguments": {}}'
    assert read_calls(prose, ["recall"]) == (prose, [])
