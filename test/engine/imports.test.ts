/**
 * The reference gateway's modules import one another one way: no circle anywhere in
 * packages/gateway/src, the composition root (engine/gateway.ts) is imported by nothing
 * but the serve entry point that assembles it, and the folders keep the order a frame
 * travels in: the turn log (log/) knows none of what comes before it or observes it, and
 * the views (views/) observe the log without driving turns.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve("packages/gateway/src");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sources(path) : entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** Each gateway module, with the gateway modules it imports (types included: a circle of types is a circle of concepts). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(root)) {
    const text = readFileSync(file, "utf8");
    const targets = [...text.matchAll(/^(?:import|export)\b[^;]*?from\s+"(\.[^"]+)"/gms)]
      .map((m) => resolve(dirname(file), m[1]!.replace(/\.js$/, ".ts")))
      .filter((target) => target.startsWith(`${root}/`));
    graph.set(
      relative(root, file),
      targets.map((t) => relative(root, t)),
    );
  }
  return graph;
}

/** Every circle of the graph, each as the path that closes it. */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") found.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, "done");
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

/** Folders whose modules may not import those of other folders, and why. */
const FOLDER_RULES: readonly { readonly folder: string; readonly mayNotImport: readonly string[]; readonly why: string }[] = [
  {
    folder: "log",
    mayNotImport: ["views", "turn", "flows", "prompt", "tools", "backends", "handlers", "engine"],
    why: "the turn log records, folds and publishes; the views observe it and the turn writes to it, it knows neither",
  },
  {
    folder: "views",
    mayNotImport: ["turn", "flows", "prompt", "tools", "backends", "handlers"],
    why: "the views are derived from what the log published; they do not drive turns or requests",
  },
];

/** The imports that break a folder rule, each as "from → to: why". */
function folderViolations(graph: Map<string, string[]>): string[] {
  const folderOf = (file: string) => (file.includes("/") ? file.slice(0, file.indexOf("/")) : ".");
  return [...graph].flatMap(([file, targets]) =>
    FOLDER_RULES.filter((rule) => folderOf(file) === rule.folder).flatMap((rule) =>
      targets.filter((target) => rule.mayNotImport.includes(folderOf(target))).map((target) => `${file} → ${target}: ${rule.why}`),
    ),
  );
}

describe("the gateway's imports", () => {
  const graph = importGraph();

  it("form no circle", () => {
    expect(circles(graph).map((c) => c.join(" → "))).toEqual([]);
  });

  it("reach the composition root only from serve.ts", () => {
    const importers = [...graph].filter(([, targets]) => targets.includes("engine/gateway.ts")).map(([file]) => file);
    expect(importers).toEqual(["serve.ts"]);
  });

  it("keep the folders' order: the log knows no view and no turn, the views drive nothing", () => {
    expect(folderViolations(graph)).toEqual([]);
  });

  it("finds an import against a folder rule when there is one (the check can fail)", () => {
    expect(folderViolations(new Map([["log/turn-log.ts", ["views/work.ts", "store/store.ts"]]]))).toEqual([
      "log/turn-log.ts → views/work.ts: the turn log records, folds and publishes; the views observe it and the turn writes to it, it knows neither",
    ]);
  });

  it("finds a circle when there is one (the check can fail)", () => {
    expect(
      circles(
        new Map([
          ["a.ts", ["b.ts"]],
          ["b.ts", ["a.ts"]],
        ]),
      ),
    ).toEqual([["a.ts", "b.ts", "a.ts"]]);
  });
});
