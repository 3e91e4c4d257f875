/**
 * The delegation graph: threads are nodes and live routes are edges from the source
 * thread to the destination thread. A route that closes a cycle would let work delegated
 * out come back in as new delegated work, and go round without end, so the gateway
 * refuses it (route_validation_failed, detail cycle_detected).
 */

export interface RouteEdge {
  readonly routeId: string;
  /** Source thread id. */
  readonly source: string;
  /** Destination thread id. */
  readonly destination: string;
}

/**
 * The cycle that adding `candidate` would close, or undefined when it closes none.
 *
 * The result is a path of thread ids from `candidate.destination` back to
 * `candidate.source` along `liveEdges`: with the candidate edge it forms the cycle
 * (destination → … → source → destination). A self-edge is a cycle by itself and gives
 * `[source]`. The path is a shortest one and, among those, the same whatever the order of
 * `liveEdges` (neighbours are visited in sorted order), so messages and tests are stable.
 *
 * The caller passes only live work edges: routes that are active and unexpired, and not
 * return edges (routes whose only action is deliver_result). A result travelling back
 * over a return route is not delegation: a route A → B with its return route B → A is
 * the normal shape of a delegation, not a cycle. Revoked, expired and prepared routes
 * carry no work, so they cannot close a loop either.
 *
 * Breadth-first and iterative: a long chain of routes cannot overflow the stack.
 */
export function wouldCloseCycle(
  candidate: { readonly source: string; readonly destination: string },
  liveEdges: readonly RouteEdge[],
): string[] | undefined {
  if (candidate.source === candidate.destination) return [candidate.source];
  const next = new Map<string, string[]>();
  for (const edge of liveEdges) {
    const targets = next.get(edge.source);
    if (targets) targets.push(edge.destination);
    else next.set(edge.source, [edge.destination]);
  }
  for (const targets of next.values()) targets.sort();

  // A path from the destination to the source exists iff the candidate closes a cycle.
  const cameFrom = new Map<string, string | undefined>([[candidate.destination, undefined]]);
  const queue = [candidate.destination];
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head]!;
    for (const target of next.get(node) ?? []) {
      if (cameFrom.has(target)) continue;
      cameFrom.set(target, node);
      if (target === candidate.source) return pathTo(target, cameFrom);
      queue.push(target);
    }
  }
  return undefined;
}

/** The path from the search's start to `node`, read back through `cameFrom`. */
function pathTo(node: string, cameFrom: ReadonlyMap<string, string | undefined>): string[] {
  const path: string[] = [];
  for (let at: string | undefined = node; at !== undefined; at = cameFrom.get(at)) path.push(at);
  return path.reverse();
}
