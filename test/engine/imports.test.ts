/**
 * The reference gateway's modules import one another one way: no circle anywhere in
 * runtime/, and the composition root (runtime/engine/gateway.ts) is imported by nothing in
 * runtime/ but the serve entry point that assembles it.
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

/** Each runtime/ module, with the runtime/ modules it imports (types included: a circle of types is a circle of concepts). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(root)) {
    const text = readFileSync(file, "utf8");
    const targets = [...text.matchAll(/^(?:import|export)\b[^;]*?from\s+"(\.[^"]+)"/gms)]
      .map((m) => resolve(dirname(file), m[1]!.replace(/\.js$/, ".ts")))
      .filter((target) => target.startsWith(`${root}/`));
    graph.set(relative(root, file), targets.map((t) => relative(root, t)));
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

describe("runtime/ imports", () => {
  const graph = importGraph();

  it("form no circle", () => {
    expect(circles(graph).map((c) => c.join(" → "))).toEqual([]);
  });

  it("reach the composition root only from serve.ts", () => {
    const importers = [...graph].filter(([, targets]) => targets.includes("engine/gateway.ts")).map(([file]) => file);
    expect(importers).toEqual(["serve.ts"]);
  });

  it("finds a circle when there is one (the check can fail)", () => {
    expect(circles(new Map([["a.ts", ["b.ts"]], ["b.ts", ["a.ts"]]]))).toEqual([["a.ts", "b.ts", "a.ts"]]);
  });
});
