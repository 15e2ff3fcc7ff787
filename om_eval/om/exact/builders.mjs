// om-eval: calls @mastra/memory's own prompt builders for om-eval's pack renderer and its tests.
//
// Usage: node builders.mjs <module> <variants-json>
//   <module>        the package's bundle file with om-eval's export line appended (see om_eval/om/exact/node.py)
//   <variants-json> {"<variant>": {"ENV_NAME": "value" | null}}: the environment each variant is loaded under
//                   (1.3.0 picks its Observer instructions from the environment when the module loads)
//
// Reads one JSON request per line on stdin and answers each with one line on stdout, prefixed with the record
// separator and "om-eval " so that anything else the package prints is told apart. A request is
//   {"id": n, "variant": "current", "call": "<name>", "args": [...]}            a function of the module
//   {"id": n, "variant": "current", "method": "<name>", "self": {...}, "args": [...]}
//                                                 a method of ObservationalMemory on a bare instance
//   {"id": n, "variant": "current", "get": "<name>"}                            an exported value
//   {"id": n, "variant": "current", "names": true}                              the module's export names
// Arguments are JSON, with a few objects revived: {"$undefined": true}, {"$messages": [...]},
// {"$map": [[key, value], ...]}, {"$extractors": {"kind", "hints", "threadTitle"}}, {"$date": [y, m, d, h, ...]}
// (a local date, as messages' times are). A result that is a chat
// message ({role, content: [...]}) comes back as its text parts (null for a non-text part).
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [modulePath, variantsJson] = process.argv.slice(2);
const variants = JSON.parse(variantsJson ?? "{}");
const loaded = new Map();

async function load(variant) {
  if (!loaded.has(variant)) {
    const env = variants[variant] ?? {};
    const saved = {};
    for (const [name, value] of Object.entries(env)) {
      saved[name] = process.env[name];
      if (value === null) delete process.env[name];
      else process.env[name] = value;
    }
    try {
      const url = `${pathToFileURL(modulePath).href}?om-eval-variant=${encodeURIComponent(variant)}`;
      loaded.set(variant, await import(url));
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  }
  return loaded.get(variant);
}

function localDate(parts) {
  const [y, mo, d, h = 0, mi = 0, s = 0, ms = 0] = parts;
  const date = new Date(2000, 0, 1);
  date.setFullYear(y, mo - 1, d);
  date.setHours(h, mi, s, ms);
  return date;
}

function message(spec, index) {
  return {
    id: spec.id ?? `om-eval-${index}`,
    role: spec.role,
    createdAt: localDate(spec.createdAt),
    threadId: spec.threadId ?? "om-eval-thread",
    resourceId: spec.resourceId ?? "om-eval-resource",
    content: { format: 2, parts: spec.parts ?? [{ type: "text", text: spec.text }] },
  };
}

async function extractors(mod, spec) {
  const config = {
    continuationHints: {
      currentTask: spec.hints.includes("current-task"),
      suggestedResponse: spec.hints.includes("suggested-response"),
    },
    threadTitle: Boolean(spec.threadTitle),
  };
  const composed = spec.kind === "reflection"
    ? mod.om_eval_composeReflectionExtractors(config)
    : mod.om_eval_composeObservationExtractors(config);
  return mod.om_eval_resolveExtractors(composed, { source: spec.kind === "reflection" ? "reflector" : "observer" });
}

async function revive(mod, value) {
  if (Array.isArray(value)) return Promise.all(value.map((item) => revive(mod, item)));
  if (value === null || typeof value !== "object") return value;
  if ("$undefined" in value) return undefined;
  if ("$messages" in value) return value.$messages.map(message);
  if ("$date" in value) return localDate(value.$date);
  if ("$map" in value) {
    const entries = await Promise.all(value.$map.map(async ([k, v]) => [k, await revive(mod, v)]));
    return new Map(entries);
  }
  if ("$extractors" in value) return extractors(mod, value.$extractors);
  const out = {};
  for (const [k, v] of Object.entries(value)) out[k] = await revive(mod, v);
  return out;
}

function plain(result) {
  if (result && typeof result === "object" && !Array.isArray(result) && Array.isArray(result.content)) {
    return result.content.map((part) => (part.type === "text" ? part.text : null));
  }
  return result;
}

async function answer(request) {
  const mod = await load(request.variant ?? "current");
  if (request.names) return Object.keys(mod).filter((name) => name.startsWith("om_eval_")).map((n) => n.slice(8));
  if (request.get) {
    const value = mod[`om_eval_${request.get}`];
    if (value === undefined) throw new Error(`the package has no ${request.get}`);
    return value;
  }
  const args = await revive(mod, request.args ?? []);
  if (request.method) {
    const OM = mod.om_eval_ObservationalMemory;
    const self = Object.assign(Object.create(OM.prototype), await revive(mod, request.self ?? {}));
    return plain(await OM.prototype[request.method].apply(self, args));
  }
  const fn = mod[`om_eval_${request.call}`];
  if (typeof fn !== "function") throw new Error(`the package has no function ${request.call}`);
  return plain(await fn(...args));
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  let reply;
  try {
    reply = { id: request.id, ok: await answer(request) };
  } catch (error) {
    reply = { id: request.id, error: String(error?.stack ?? error) };
  }
  process.stdout.write(`\u001eom-eval ${JSON.stringify(reply)}\n`);
}
