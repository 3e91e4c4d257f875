/**
 * Who records the resolution of a request (a permission request, a question) when several
 * instances share the store: the answer may reach any instance, the turn runs on one, and
 * the store decides which instance records the resolution, once.
 */
import type { ResolutionPorts, TurnReader } from "../engine/ports.js";
import type { SharedDelivery } from "../log/delivery.js";
import type { TurnLog } from "../log/turn-log.js";
import type { SharedStore } from "../store/store.js";
import type { TurnRuns } from "../turn/runs.js";

export interface SharedResolutionPorts {
  readonly shared: Pick<SharedStore, "claimResolution">;
  /** The turns this instance runs. */
  readonly runs: Pick<TurnRuns, "has">;
  readonly log: TurnReader & Pick<TurnLog, "underHold">;
  readonly delivery: Pick<SharedDelivery, "catchUp">;
}

/** The resolution ports of an instance on a shared store: a running turn this instance does not run runs elsewhere. */
export function sharedResolutions({ shared, runs, log, delivery }: SharedResolutionPorts): ResolutionPorts {
  return {
    runsElsewhere: (turnId) => !runs.has(turnId) && log.state(turnId)?.turn.status === "InProgress",
    // Under the generation this instance runs the turn by: a run fenced off it claims nothing.
    claim: (turnId, subject) => log.underHold(turnId, (generation) => shared.claimResolution(turnId, subject, generation)),
    catchUp: (turnId) => delivery.catchUp(turnId),
  };
}
