/**
 * Cycle detection over the delegation graph (threads as nodes, live work routes as edges):
 * a candidate route closes a cycle exactly when its destination already reaches its source.
 */
import { describe, expect, it } from "vitest";
import { type RouteEdge, wouldCloseCycle } from "../../packages/gateway/src/routes/graph.js";

/** Edges from "a>b" strings; route ids are r1, r2, … in order. */
function edges(...pairs: string[]): RouteEdge[] {
  return pairs.map((pair, i) => {
    const [source, destination] = pair.split(">");
    return { routeId: `r${i + 1}`, source: source!, destination: destination! };
  });
}

const rows: [string, { candidate: string; graph: RouteEdge[]; want: string[] | undefined }][] = [
  ["a self-edge on an empty graph", { candidate: "a>a", graph: [], want: ["a"] }],
  ["a self-edge beside other routes", { candidate: "b>b", graph: edges("a>b", "b>c"), want: ["b"] }],
  ["a first edge", { candidate: "a>b", graph: [], want: undefined }],
  ["the reverse of an edge (2-cycle)", { candidate: "b>a", graph: edges("a>b"), want: ["a", "b"] }],
  ["a second route along an edge", { candidate: "a>b", graph: edges("a>b"), want: undefined }],
  ["a long chain closing on itself", { candidate: "e>a", graph: edges("a>b", "b>c", "c>d", "d>e"), want: ["a", "b", "c", "d", "e"] }],
  ["a shortcut along a long chain", { candidate: "a>e", graph: edges("a>b", "b>c", "c>d", "d>e"), want: undefined }],
  ["an inner edge back along a chain", { candidate: "d>b", graph: edges("a>b", "b>c", "c>d", "d>e"), want: ["b", "c", "d"] }],
  ["a diamond's shortcut (two paths, no cycle)", { candidate: "a>d", graph: edges("a>b", "a>c", "b>d", "c>d"), want: undefined }],
  ["a diamond closed from its sink", { candidate: "d>a", graph: edges("a>b", "a>c", "b>d", "c>d"), want: ["a", "b", "d"] }],
  ["a bridge between disconnected components", { candidate: "b>c", graph: edges("a>b", "c>d"), want: undefined }],
  [
    "a bridge back between components already joined one way",
    { candidate: "d>a", graph: edges("a>b", "c>d", "b>c"), want: ["a", "b", "c", "d"] },
  ],
  ["an edge beside a component that has a cycle already", { candidate: "a>b", graph: edges("x>y", "y>x"), want: undefined }],
  ["an edge into a cycle it does not join", { candidate: "a>x", graph: edges("x>y", "y>x"), want: undefined }],
  ["a shorter of two ways back", { candidate: "z>a", graph: edges("a>b", "b>c", "c>z", "a>z"), want: ["a", "z"] }],
];

describe("wouldCloseCycle", () => {
  it.each(rows)("%s", (_name, { candidate, graph, want }) => {
    const [source, destination] = candidate.split(">");
    expect(wouldCloseCycle({ source: source!, destination: destination! }, graph)).toEqual(want);
  });

  it("gives a path that, with the candidate, is a cycle of real edges", () => {
    const graph = edges("a>b", "b>c", "c>a2", "a2>d", "b>d", "d>e");
    const path = wouldCloseCycle({ source: "e", destination: "b" }, graph)!;
    expect(path[0]).toBe("b");
    expect(path.at(-1)).toBe("e");
    for (let i = 0; i + 1 < path.length; i++) {
      expect(
        graph.some((e) => e.source === path[i] && e.destination === path[i + 1]),
        `${path[i]} → ${path[i + 1]}`,
      ).toBe(true);
    }
    expect(path).toEqual(["b", "d", "e"]);
  });

  it("gives the same path whatever the order of the edges", () => {
    // Two shortest ways back (through m and through n): the choice must not follow input order.
    const graph = edges("a>n", "n>z", "a>m", "m>z", "z>q");
    const reversed = [...graph].reverse();
    const want = ["a", "m", "z"];
    expect(wouldCloseCycle({ source: "z", destination: "a" }, graph)).toEqual(want);
    expect(wouldCloseCycle({ source: "z", destination: "a" }, reversed)).toEqual(want);
  });

  it("walks a chain of 50 000 routes (far deeper than recursion allows) without running out of stack", () => {
    const n = 50_000;
    const chain = Array.from({ length: n }, (_, i) => ({ routeId: `r${i}`, source: `t${i}`, destination: `t${i + 1}` }));
    const path = wouldCloseCycle({ source: `t${n}`, destination: "t0" }, chain);
    expect(path).toHaveLength(n + 1);
    expect(path?.[0]).toBe("t0");
    expect(path?.at(-1)).toBe(`t${n}`);
    expect(wouldCloseCycle({ source: "t0", destination: `t${n}` }, chain)).toBeUndefined();
  });

  it("counts a return edge only if the caller passes it, which the caller must not", () => {
    // a delegates to b, b can send the result back to a, and a delegates to x. A route
    // x → b is not a loop of delegation: b reaches x only through its return route.
    const routes = [
      { route_id: "r1", allowed_actions: ["send_message", "create_task"], source: "a", destination: "b" },
      { route_id: "r2", allowed_actions: ["deliver_result"], source: "b", destination: "a" },
      { route_id: "r3", allowed_actions: ["start_agent"], source: "a", destination: "x" },
    ];
    const all = routes.map((r) => ({ routeId: r.route_id, source: r.source, destination: r.destination }));
    const work = routes
      .filter((r) => !r.allowed_actions.every((a) => a === "deliver_result"))
      .map((r) => ({ routeId: r.route_id, source: r.source, destination: r.destination }));
    expect(work.map((e) => e.routeId)).toEqual(["r1", "r3"]);
    expect(wouldCloseCycle({ source: "x", destination: "b" }, work)).toBeUndefined();
    expect(wouldCloseCycle({ source: "x", destination: "b" }, all)).toEqual(["b", "a", "x"]);
    // Checked as a candidate, the return route itself would close a → b → a: which is why the
    // caller does not check a route whose only action is deliver_result at all.
    expect(wouldCloseCycle({ source: "b", destination: "a" }, work)).toEqual(["a", "b"]);
  });
});
