/**
 * The turns this instance runs now, each with the controller that stops its run and the
 * promise that settles when the run has ended. The lifecycle starts and ends the runs; on a
 * shared store, the request flows ask whether a turn runs here or on another instance.
 */
export interface Run {
  readonly abort: AbortController;
  readonly done: Promise<void>;
}

export class TurnRuns {
  private readonly running = new Map<string, Run>();

  /** Whether this instance runs the turn now. */
  has(turnId: string): boolean {
    return this.running.has(turnId);
  }

  get(turnId: string): Run | undefined {
    return this.running.get(turnId);
  }

  add(turnId: string, run: Run): void {
    this.running.set(turnId, run);
  }

  delete(turnId: string): void {
    this.running.delete(turnId);
  }

  /** The runs going here. */
  runs(): Run[] {
    return [...this.running.values()];
  }

  /** The turns running here, with their runs. */
  entries(): IterableIterator<[string, Run]> {
    return this.running.entries();
  }

  /** The ids of the turns running here. */
  turnIds(): string[] {
    return [...this.running.keys()];
  }
}
