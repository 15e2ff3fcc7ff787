// om-eval: the engine side of the Mastra differential (tests/om/test_mastra_engine_differential.py).
//
// Replays generated conversations through the real @mastra/memory ObservationalMemory processor, one
// user/assistant pair per agent turn of two steps: processInputStep at step 0 (history load, activation,
// buffering trigger, reflection check), processInputStep at step 1 (per-step save and the synchronous threshold
// check, which 1.x runs only at steps after the first), then processOutputResult (final save). Background
// buffering is awaited after every step, so each buffer pass finishes before the next message arrives. The
// Observer and Reflector are deterministic stand-ins that read the message tags planted in the conversation
// (`«m12|May 1, 2023|09:00» words…`) and answer by the rule om-eval's Python side applies too
// (tests/om/engine_mock.py). After the last pair, a final question is put to the memory in a new thread (resource
// scope) or in the last thread (thread scope), and the messages the actor would receive are recorded.
//
// With "recordPrompts": true in the config, each call also records the prompt the model was handed (its system,
// user and assistant messages as the model receives them), for tests/om/test_mastra_exact_differential.py.
//
// Input (stdin, JSON): {"config": {...OM options...}, "conversations": [{"resource": id, "sessions": [{"thread":
// id, "createdAt": iso, "messages": [{id, role, text, createdAt}]}], "question": {thread, text, createdAt, now}}]}.
// Output (stdout, JSON): per conversation, the events of each pair and the actor's messages.
// Run from a folder where @mastra/memory, @mastra/core and zod are installed.
//
// Two engine APIs are driven, told apart by what `@mastra/memory/processors` exports:
// * 1.10 (`ObservationalMemory` is itself the processor): the engine loads history from storage and its
//   background buffering is awaited with the static `ObservationalMemory.awaitBuffering`.
// * 1.31 (`ObservationalMemoryProcessor` exported): the engine is wrapped by one processor per agent call, the
//   input and output sides being separate instances that share the call's processor state (as an agent does it),
//   history comes from a `Memory` (its `getContext`, whose engine is ours: `obscureThreadIds` is an engine option
//   `Memory` does not pass on), buffering is awaited with `waitForBuffering` plus `settled()`, and the date the
//   actor's observations are dated against (read from the request context by 1.10) is passed to the engine's
//   context builder, which 1.31's processor calls without one (so it would take the wall clock); likewise each
//   message part carries its message's time (see dbMessage).
import { MessageList } from "@mastra/core/agent";
import { RequestContext } from "@mastra/core/request-context";
import { InMemoryStore } from "@mastra/core/storage";
import * as omProcessors from "@mastra/memory/processors";

const { ObservationalMemory, ObservationalMemoryProcessor } = omProcessors;

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { config, conversations } = JSON.parse(input);

// ---------------------------------------------------------------------------- the stand-in models

const TAG = /«(m\d+)\|([^|»]+)\|(\d\d:\d\d)»((?: [a-z]+){0,6})/g;
const THREAD_OPEN = /<thread id="([^"]+)">/g;
const FACT = /fact (m\d+)/g;
const DATE_LINE = /^Date: .+$/m;

function promptText(prompt) {
  // Every non-system message of the call, in order (the system prompt holds format examples, not input).
  return prompt
    .filter((m) => m.role !== "system")
    .map((m) => (typeof m.content === "string" ? m.content : m.content.map((p) => p.text ?? "").join("\n")))
    .join("\n");
}

// Continuity hints, so that their reading is compared too. They follow k, half the number of a section's last
// message (0 without facts): a current task unless k is a multiple of 3, a suggested response when k is even, a
// second current task when k % 4 == 1 (1.10 keeps the first, 1.27+ the last), and when k % 5 == 2 an inline
// suggested response on the first fact line (1.10 keeps it in the observations, 1.27+ cuts it out with the line
// break after it). A section without a hint makes an activation clear the thread's.
const halfNumber = (facts) => (facts.length ? Math.floor(Number(facts.at(-1).tag.slice(1)) / 2) : 0);
function hintLines(facts) {
  const n = halfNumber(facts), first = facts[0]?.tag ?? "none", last = facts.at(-1)?.tag ?? "none";
  const out = [];
  if (n % 3 !== 0) out.push(`<current-task>\nPrimary: follow up on ${last}\n</current-task>`);
  if (n % 2 === 0) out.push(`<suggested-response>\nAsk about ${first}\n</suggested-response>`);
  if (n % 4 === 1) out.push(`<current-task>\nSecondary: revisit ${first}\n</current-task>`);
  return out;
}

export function observerReply(text) {
  const threadStarts = [...text.matchAll(THREAD_OPEN)].map((m) => [m.index, m[1]]);
  const seen = new Set();
  const byThread = new Map();
  for (const m of text.matchAll(TAG)) {
    if (seen.has(m[1])) continue;
    seen.add(m[1]);
    let thread = "";
    for (const [at, id] of threadStarts) if (at < m.index) thread = id;
    if (!byThread.has(thread)) byThread.set(thread, []);
    byThread.get(thread).push({ tag: m[1], date: m[2], time: m[3], words: m[4].trim() });
  }
  const section = (facts) => {
    const lines = [];
    let date = null;
    for (const f of facts) {
      if (f.date !== date) { lines.push(`Date: ${f.date}`); date = f.date; }
      let line = `* 🔴 (${f.time}) fact ${f.tag}: the speaker said ${f.words}`;
      if (f === facts[0] && halfNumber(facts) % 5 === 2) line += ` <suggested-response>inline ${facts.at(-1).tag}</suggested-response>`;
      lines.push(line);
    }
    return lines.join("\n");
  };
  if (threadStarts.length === 0) {
    const facts = byThread.get("") ?? [];
    return [`<observations>\n${section(facts)}\n</observations>`, ...hintLines(facts)].join("\n");
  }
  const parts = [...byThread.entries()].map(([id, facts]) =>
    [`<thread id="${id}">`, section(facts), ...hintLines(facts), "</thread>"].join("\n"));
  return `<observations>\n${parts.join("\n")}\n</observations>`;
}

export function reflectorReply(text) {
  const tags = [...new Set([...text.matchAll(FACT)].map((m) => m[1]))];
  const date = text.match(DATE_LINE)?.[0] ?? "Date: Jan 1, 2000";
  const kept = tags.filter((_, i) => i % 4 === 0).map((t) => `* 🔴 (00:00) kept fact ${t} from the earlier notes`);
  const hints = [];
  if (tags.length % 2 === 0) hints.push(`<suggested-response>\nReflect on ${tags[0] ?? "none"}\n</suggested-response>`);
  if (tags.length % 3 === 1) hints.push(`<current-task>\nReview ${tags.at(-1)}\n</current-task>`);
  return [`<observations>\n${date}\n${kept.join("\n")}\n</observations>`, ...hints].join("\n");
}

const calls = [];
function standIn(modelId, kind, reply) {
  const generate = async (options) => {
    const text = promptText(options.prompt);
    const call = { kind, tags: [...new Set([...text.matchAll(TAG)].map((m) => m[1]))] };
    if (config.recordPrompts) call.prompt = options.prompt; // prompt=mastra_exact: the whole request, compared
    calls.push(call);
    return {
      content: [{ type: "text", text: reply(text) }], finishReason: "stop",
      usage: { inputTokens: 10, outputTokens: 20, totalTokens: 30 }, warnings: [],
      rawCall: { rawPrompt: null, rawSettings: {} },
    };
  };
  return {
    specificationVersion: "v2", provider: "om-eval", modelId, supportedUrls: {},
    doGenerate: generate,
    doStream: async (options) => {
      const result = await generate(options);
      const parts = [
        { type: "stream-start", warnings: [] },
        { type: "response-metadata", id: "r", modelId, timestamp: new Date(0) },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: result.content[0].text },
        { type: "text-end", id: "t" },
        { type: "finish", finishReason: "stop", usage: result.usage },
      ];
      return { stream: new ReadableStream({ start(c) { for (const p of parts) c.enqueue(p); c.close(); } }), rawCall: result.rawCall };
    },
  };
}

// ---------------------------------------------------------------------------- the replay

function dbMessage(m, threadId, resourceId) {
  const part = { type: "text", text: m.text };
  // 1.31: the message list stamps a part that has no time with the wall clock, and the Observer dates its lines
  // by their parts' times, so each part is given its message's (simulated) time.
  if (ObservationalMemoryProcessor) part.createdAt = Date.parse(m.createdAt);
  return {
    id: m.id, role: m.role, createdAt: new Date(m.createdAt), threadId, resourceId, type: "text",
    content: { format: 2, parts: [part] },
  };
}

function recordState(record) {
  if (!record) return null;
  return {
    generation: record.generationCount ?? 0,
    observations: record.activeObservations ?? "",
    observationTokens: record.observationTokenCount ?? 0,
    chunks: (record.bufferedObservationChunks ?? []).map((c) => ({
      messageIds: c.messageIds, messageTokens: c.messageTokens, tokens: c.tokenCount,
    })),
    bufferedReflection: record.bufferedReflection ?? null,
  };
}

function actorView(list) {
  const system = list.getAllSystemMessages().map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
  const messages = list.get.all.db().map((m) => ({
    id: m.id, role: m.role, text: m.content.parts.filter((p) => p.type === "text").map((p) => p.text).join(""),
  }));
  return { system, messages };
}

// 1.31: the engine, with a Memory whose getContext (history, observations, continuation) reads it.
async function processorEngine(storage, store, options) {
  const { Memory } = await import("@mastra/memory");
  class ReplayMemory extends Memory {
    get omEngine() {
      return Promise.resolve(this.omEvalEngine);
    }
  }
  const memory = new ReplayMemory({ storage, options: { observationalMemory: options } });
  const engine = new ObservationalMemory({
    ...options, storage: store, memory, obscureThreadIds: config.obscureThreadIds,
  });
  memory.omEvalEngine = engine;
  const build = engine.buildContextSystemMessages.bind(engine);
  engine.buildContextSystemMessages = (opts) => build({ ...opts, currentDate: opts.currentDate ?? engine.omEvalNow });
  return engine;
}

async function replay(conversation) {
  const storage = new InMemoryStore();
  const store = await storage.getStore("memory");
  const observation = { messageTokens: config.messageTokens, maxTokensPerBatch: config.maxTokensPerBatch };
  const reflection = { observationTokens: config.observationTokens };
  if (config.buffering) {
    if (config.bufferTokens != null) observation.bufferTokens = config.bufferTokens;
    if (config.bufferActivation != null) observation.bufferActivation = config.bufferActivation;
    if (config.blockAfter != null) observation.blockAfter = config.blockAfter;
  } else {
    observation.bufferTokens = false;
  }
  observation.model = standIn("om-eval-observer", "observer", observerReply);
  reflection.model = standIn("om-eval-reflector", "reflector", reflectorReply);
  const resourceId = conversation.resource;
  const engine = ObservationalMemoryProcessor
    ? await processorEngine(storage, store, { scope: config.scope, observation, reflection })
    : new ObservationalMemory({
      storage: store, scope: config.scope, obscureThreadIds: config.obscureThreadIds, observation, reflection,
    });
  const pairs = [];
  const context = (threadId, now) => {
    const rc = new RequestContext();
    rc.set("MastraMemory", { thread: { id: threadId }, resourceId });
    rc.set("currentDate", new Date(now));
    return rc;
  };
  const settle = async (threadId) => {
    if (!ObservationalMemoryProcessor) {
      await ObservationalMemory.awaitBuffering(threadId, resourceId, store);
      return;
    }
    // A finished buffer pass can start a buffered reflection: wait until no background work is left.
    const key = config.scope === "resource" ? `resource:${resourceId}` : `thread:${threadId}`;
    const busy = () => engine.buffering.isAsyncBufferingInProgress(`obs:${key}`)
      || engine.buffering.isAsyncBufferingInProgress(`refl:${key}`);
    do {
      await engine.waitForBuffering(threadId, resourceId);
      await engine.settled();
      await new Promise((resolve) => setImmediate(resolve));
    } while (busy());
  };
  const turn = async (threadId, messages, now, steps) => {
    const list = new MessageList({ threadId, resourceId });
    if (messages.length) list.add(messages.map((m) => dbMessage(m, threadId, resourceId)), "input");
    const requestContext = context(threadId, now);
    const state = {};
    // 1.31: one processor per agent call for the input steps, another for the output result (see the top).
    const [om, output] = ObservationalMemoryProcessor
      ? [0, 1].map(() => new ObservationalMemoryProcessor(engine, engine.getMemory()))
      : [engine, engine];
    if (ObservationalMemoryProcessor) engine.omEvalNow = new Date(now);
    for (let step = 0; step < steps; step++) {
      await om.processInputStep({ messageList: list, requestContext, stepNumber: step, state, messages: [] });
      await settle(threadId);
    }
    return { list, requestContext, state, output };
  };
  for (const session of conversation.sessions) {
    const at = new Date(session.createdAt);
    await store.saveThread({ thread: { id: session.thread, resourceId, title: "", createdAt: at, updatedAt: at, metadata: {} } });
    for (let start = 0; start < session.messages.length; start += 2) {
      const unit = session.messages.slice(start, start + 2);
      const before = calls.length;
      const now = unit[unit.length - 1].createdAt;
      const { list, requestContext, state, output } = await turn(session.thread, unit, now, 2);
      await output.processOutputResult({ messageList: list, requestContext, state, messages: [] });
      await settle(session.thread);
      const record = await store.getObservationalMemory(config.scope === "resource" ? null : session.thread, resourceId);
      pairs.push({ thread: session.thread, messageIds: unit.map((m) => m.id), calls: calls.slice(before), record: recordState(record) });
    }
  }
  // The question: a new thread of the resource, or (thread scope, where a new thread has no memory) the last one.
  const q = conversation.question;
  const askIn = config.scope === "resource" ? q.thread : conversation.sessions.at(-1).thread;
  if (config.scope === "resource") {
    const at = new Date(q.createdAt);
    await store.saveThread({ thread: { id: askIn, resourceId, title: "", createdAt: at, updatedAt: at, metadata: {} } });
  }
  const before = calls.length;
  // Step 0 of the question's turn with no new message, so the list holds what memory gives the actor.
  const { list } = await turn(askIn, [], q.now, 1);
  return { pairs, actor: actorView(list), questionCalls: calls.slice(before) };
}

const results = [];
for (const conversation of conversations) {
  calls.length = 0;
  try {
    results.push(await replay(conversation));
  } catch (error) {
    results.push({ error: String(error?.stack ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
