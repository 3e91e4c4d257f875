/**
 * Who records the resolution of a request (a permission request, a question) when several
 * instances share the store: the answer may reach any instance, the turn runs on one, and
 * the store decides which instance records the resolution, once.
 */
import type { ResolutionPorts, TurnReader } from "../engine/ports.js";
import type { SharedDelivery } from "../log/delivery.js";
import type { SharedStore } from "../store/store.js";
import type { TurnRuns } from "../turn/runs.js";

export interface SharedResolutionPorts {
  readonly shared: Pick<SharedStore, "claimResolution">;
  /** The turns this instance runs. */
  readonly runs: Pick<TurnRuns, "has">;
  readonly log: TurnReader;
  readonly delivery: Pick<SharedDelivery, "catchUp">;
}

/** The resolution ports of an instance on a shared store: a running turn this instance does not run runs elsewhere. */
export function sharedResolutions({ shared, runs, log, delivery }: SharedResolutionPorts): ResolutionPorts {
  return {
    runsElsewhere: (turnId) => !runs.has(turnId) && log.state(turnId)?.turn.status === "InProgress",
    claim: (turnId, subject) => shared.claimResolution(turnId, subject),
    catchUp: (turnId) => delivery.catchUp(turnId),
  };
}
