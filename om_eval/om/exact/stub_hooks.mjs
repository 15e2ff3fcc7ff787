// om-eval: Node module hooks that let @mastra/memory's bundle load without its dependencies.
//
// Every bare import that is not a Node builtin (@mastra/core, zod, xxhash-wasm, ...) resolves to a synthetic
// module whose exports are inert stand-ins: objects that can be read, called, constructed and extended
// without doing anything. The names a stand-in module exports are read from the import statements of the file
// that imports it. The prompt builders om-eval calls are plain string code; the stand-ins only let the bundle's
// top level (class declarations, schema definitions) evaluate. That the texts come out the same as with the
// real dependencies is checked by om-eval's tests, and the rendered pack is pinned by hash.
import { readFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import { fileURLToPath } from "node:url";

const PREFIX = "om-eval-stub:";
const sources = new Map();

function sourceOf(url) {
  if (!sources.has(url)) sources.set(url, readFileSync(fileURLToPath(url), "utf8"));
  return sources.get(url);
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function importedNames(list) {
  return list.split(",").map((part) => part.trim().split(/\s+as\s+/)[0].trim()).filter(Boolean);
}

function namesFor(parentURL, specifier) {
  const names = new Set(["default"]);
  if (!parentURL || !parentURL.startsWith("file:")) return names;
  const source = sourceOf(parentURL);
  const from = `from\\s*["']${escapeRegExp(specifier)}["']`;
  for (const match of source.matchAll(new RegExp(`import\\s+(?:[\\w$]+\\s*,\\s*)?\\{([^}]*)\\}\\s*${from}`, "g"))) {
    for (const name of importedNames(match[1])) names.add(name);
  }
  for (const match of source.matchAll(new RegExp(`export\\s*\\{([^}]*)\\}\\s*${from}`, "g"))) {
    for (const name of importedNames(match[1])) names.add(name);
  }
  for (const match of source.matchAll(new RegExp(`import\\s+\\*\\s+as\\s+([\\w$]+)\\s*${from}`, "g"))) {
    const use = new RegExp(`(?<![\\w$.])${escapeRegExp(match[1])}\\.([\\w$]+)`, "g");
    for (const found of source.matchAll(use)) names.add(found[1]);
  }
  return names;
}

export async function resolve(specifier, context, next) {
  const bare = !/^(\.{0,2}\/|[a-z][a-z0-9+.-]*:)/i.test(specifier);
  if (bare && !isBuiltin(specifier)) {
    const names = [...namesFor(context.parentURL, specifier)].filter((n) => /^[\w$]+$/.test(n)).sort();
    return { url: `${PREFIX}${encodeURIComponent(specifier)}?${names.join(",")}`, shortCircuit: true };
  }
  return next(specifier, context);
}

const FACTORY = `
const make = () => {
  const target = function () {};
  return new Proxy(target, {
    get(t, key) {
      if (key === "prototype") return t.prototype;
      if (key === Symbol.toPrimitive) return () => "";
      if (typeof key === "symbol" || key === "then") return undefined;
      return make();
    },
    apply() { return make(); },
    construct() { return make(); },
  });
};
`;

export async function load(url, context, next) {
  if (!url.startsWith(PREFIX)) return next(url, context);
  const names = url.slice(url.indexOf("?") + 1).split(",").filter(Boolean);
  const lines = [FACTORY];
  for (const name of names) {
    lines.push(name === "default" ? "export default make();" : `export const ${name} = make();`);
  }
  return { format: "module", source: lines.join("\n"), shortCircuit: true };
}
