// om-eval: replays generated sessions pair by pair through the real @mastra/memory ObservationalMemory, the way
// Mastra's LongMemEval harness feeds a haystack (one agent.generate call per user/assistant pair, a text-only
// mock actor, resource scope), and reports after each pair how many Observer calls were made and what the OM
// record holds. Input (stdin, JSON): {"sessions": [[[user, assistant], ...], ...], "messageTokens": N}.
// Output (stdout, JSON): one entry per pair. Run from a folder where @mastra/memory and @mastra/core are installed.
import { Agent } from "@mastra/core/agent";
import { InMemoryStore } from "@mastra/core/storage";
import { createMockModel } from "@mastra/core/test-utils/llm-mock";
import { Memory } from "@mastra/memory";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { sessions, messageTokens } = JSON.parse(input);

let observerCalls = 0;
const observer = createMockModel({
  mockText: "<observations>\nDate: May 1, 2023\n* 🔴 (09:00) The user shared a detail.\n</observations>",
  spyGenerate: () => { observerCalls += 1; },
});
const storage = new InMemoryStore();
const memory = new Memory({
  storage,
  options: {
    lastMessages: 10,
    observationalMemory: {
      scope: "resource",
      model: observer,
      observation: { messageTokens, bufferTokens: false },
      reflection: { observationTokens: 1_000_000 },
    },
  },
});
const agent = new Agent({ id: "replay", name: "replay", instructions: "Reply.", model: createMockModel({ mockText: "" }), memory });
const resource = "resource_probe";
const start = Date.UTC(2023, 4, 1, 9, 0, 0);
const store = await storage.getStore("memory");
const report = [];
for (const [s, pairs] of sessions.entries()) {
  for (const [p, [user, assistant]] of pairs.entries()) {
    const at = start + s * 86_400_000 + p * 10_000;
    await agent.generate(
      [
        { id: `s${s}-u${p}`, role: "user", content: user, createdAt: new Date(at) },
        { id: `s${s}-a${p}`, role: "assistant", content: assistant, createdAt: new Date(at + 5_000) },
      ],
      { memory: { thread: `session-${s}`, resource } },
    );
    const record = await store.getObservationalMemory(null, resource);
    report.push({
      session: s, pair: p, observerCalls,
      pendingMessageTokens: record?.pendingMessageTokens ?? null,
      observationTokens: record?.observationTokenCount ?? 0,
    });
  }
}
process.stdout.write(JSON.stringify(report));
