/**
 * The writer of the SQLite store (sqlite.ts): a worker thread with its own connection to
 * the file that commits the store's batches of appends, so that neither the inserts nor
 * the commit run on the event loop.
 *
 * A batch is posted as one message of flat arrays (cheap to clone: no object per row),
 * its events gathered into runs (EventRuns, below, which the main connection uses too), and
 * the writer answers each in the order posted. For each batch it takes the write lock
 * (BEGIN IMMEDIATE), inserts the new turns, checks that each run follows the highest
 * sequence the file holds of its turn (the main thread hands sequences out without reading
 * them under the lock, so this check is what keeps them gap-free and duplicate-free against
 * another writer or an earlier batch of the turn that failed), inserts the runs, commits,
 * and answers. A batch that fails is rolled back whole and answered with the reason.
 *
 * The writer's connection checkpoints the WAL by itself (SQLite's default, every 1,000
 * pages) only while the store's checkpointing thread does not (sqlite.ts): the fsyncs of a
 * checkpoint would hold up every commit behind it.
 *
 * Answers are taken in two ways: as messages on the event loop, and synchronously, for a
 * caller that must see its writes committed before it goes on (`drain`): the writer counts
 * its answers in a SharedArrayBuffer and notifies it, the main thread waits on it with
 * Atomics.wait and takes the answers with receiveMessageOnPort.
 */
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";

/**
 * How a turn's events are stored: one row per run, the events a batch holds of one turn
 * (consecutive sequences), instead of one row per event. A streamed answer's run is a few
 * hundred deltas: one row costs SQLite about a third of what as many rows do (their keys,
 * their repeated turn, thread, method and time, their cells in the tree), which is most of
 * the writer's time. The columns (schema version 3, sqlite.ts):
 *
 * - turn_id, first_sequence, last_sequence, thread_id;
 * - params: the JSON texts of the events' params, one after the other, exactly as sent;
 * - ends: a JSON array of where each event's text ends in `params` (UTF-16 code units, as
 *   JavaScript counts them), the last event's left out (it ends with `params`);
 * - methods and recorded_at: JSON arrays of [value, count] pairs, in order: each value for
 *   that many consecutive events (a run's events mostly share both).
 *
 * INSERT_RUN inserts one run, its values in the order runRow (RUNS_SOURCE) gives them.
 */
export const INSERT_RUN =
  "INSERT INTO event_runs (turn_id, last_sequence, first_sequence, thread_id, methods, recorded_at, ends, params) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";

/** The highest sequence the file holds of a turn (0 for none): one seek in the primary key. */
export const LAST_SEQUENCE = "SELECT IFNULL(MAX(last_sequence), 0) AS last FROM event_runs WHERE turn_id = ?";

/** The events of one turn in one batch, as they are added. */
class Run {
  readonly params: string[] = [];
  /** Where each event's text ends in the joined params. */
  readonly ends: number[] = [];
  /** [value, count] pairs, flat. */
  readonly methods: (string | number)[] = [];
  readonly times: (string | number)[] = [];
  chars = 0;

  constructor(
    readonly turnId: string,
    readonly threadId: string,
    readonly first: number,
  ) {}

  get next(): number {
    return this.first + this.params.length;
  }
}

/** Counts `value` into flat [value, count] pairs: one more of the last value, or a new pair. */
function countInto(pairs: (string | number)[], value: string): void {
  const at = pairs.length - 2;
  if (at >= 0 && pairs[at] === value) (pairs[at + 1] as number)++;
  else pairs.push(value, 1);
}

/**
 * A run as it is posted: [turn_id, first_sequence, last_sequence, thread_id, methods and
 * times as flat [value, count] pairs, the end of each event's text, the joined texts].
 * The writer thread makes its row of it (RUNS_SOURCE), so that the main thread does not.
 */
export type RunMaterial = readonly [
  string,
  number,
  number,
  string,
  readonly (string | number)[],
  readonly (string | number)[],
  readonly number[],
  string,
];

/**
 * Plain JavaScript, evaluated in the writer thread and here (for the main connection,
 * which writes when there is no writer): insertRuns inserts runs, each after a check that
 * it follows what the file holds of its turn, with the row runRow makes of it (in
 * INSERT_RUN's order).
 */
const RUNS_SOURCE = `function runRow(run) {
  const pairs = (flat) => {
    let json = "[";
    for (let at = 0; at < flat.length; at += 2) json += (at === 0 ? "[" : ",[") + JSON.stringify(flat[at]) + "," + flat[at + 1] + "]";
    return json + "]";
  };
  return [run[0], run[2], run[1], run[3], pairs(run[4]), pairs(run[5]), "[" + run[6].slice(0, -1).join(",") + "]", run[7]];
}
function insertRuns(statements, runs) {
  for (const run of runs) {
    const turnId = run[0];
    const first = run[1];
    const last = statements.lastSequence.get(turnId).last;
    if (first !== last + 1) {
      throw new Error(
        "turn " + turnId + " would get sequence " + first + " but the file holds it up to " + last +
          (first > last + 1 ? ": an earlier commit of the turn failed" : ": another writer appended to the turn"),
      );
    }
    statements.insertRun.run(runRow(run));
  }
}`;

/** The statements insertRuns uses: LAST_SEQUENCE and INSERT_RUN, prepared on a connection. */
export interface RunStatements {
  readonly lastSequence: { get(turnId: string): { last: number } | undefined };
  readonly insertRun: { run(row: (string | number)[]): unknown };
}

/** Inserts runs (RUNS_SOURCE), throwing at the first that does not follow what the file holds of its turn. */
export const insertRuns = new Function(`${RUNS_SOURCE}\nreturn insertRuns;`)() as (
  statements: RunStatements,
  runs: readonly RunMaterial[],
) => void;

/**
 * The events of a batch, gathered into runs (a new run whenever an event does not follow
 * its turn's run: on another turn, or after a gap), and the turns the batch registers.
 */
export class EventRuns {
  private readonly runs: Run[] = [];
  private readonly byTurn = new Map<string, Run>();
  // Consecutive events mostly continue the same run: an identity check is cheaper than a lookup.
  private last: Run | undefined;
  /** turn_id, thread_id, created_at per turn registered in the batch. */
  readonly turns: string[] = [];
  /** Events added. */
  events = 0;

  add(turnId: string, sequence: number, threadId: string, method: string, params: string, recordedAt: string): void {
    let run = this.last;
    if (run === undefined || run.turnId !== turnId || run.next !== sequence) {
      run = this.byTurn.get(turnId);
      if (run === undefined || run.next !== sequence) {
        run = new Run(turnId, threadId, sequence);
        this.byTurn.set(turnId, run);
        this.runs.push(run);
      }
      this.last = run;
    }
    run.chars += params.length;
    run.ends.push(run.chars);
    run.params.push(params);
    countInto(run.methods, method);
    countInto(run.times, recordedAt);
    this.events++;
  }

  /** The runs, as they are posted (insertRuns makes each a row). */
  material(): RunMaterial[] {
    return this.runs.map(
      (run) => [run.turnId, run.first, run.next - 1, run.threadId, run.methods, run.times, run.ends, run.params.join("")] as const,
    );
  }

  /** Forgets the events (inserted), keeping the turns registered. */
  clearEvents(): void {
    this.runs.length = 0;
    this.byTurn.clear();
    this.last = undefined;
    this.events = 0;
  }

  message(): WriterMessage {
    return { runs: this.material(), turns: this.turns };
  }
}

/** One batch as it is posted: its runs and the turns it registers (cheap to clone: no object per event). */
export interface WriterMessage {
  readonly runs: readonly RunMaterial[];
  /** turn_id, thread_id, created_at per turn registered in the batch. */
  readonly turns: readonly string[];
}

/** The values of one new turn. */
export const TURN_COLUMNS = 3;

export interface WriterEvents {
  /** A batch was answered: committed (no reason), or failed and rolled back, with the reason. Called in the order posted. */
  readonly answered: (failure: string | undefined) => void;
  /** The writer is gone (it failed to open the file, crashed or exited); `reason` says why. Called once; no answer follows. */
  readonly gone: (reason: string) => void;
}

/** Slots of the shared counter: answers given by the writer, and whether it is gone. */
const ANSWERS = 0;
const GONE = 1;
/** How long one Atomics.wait sleeps before it looks again whether the writer is gone, in ms. */
const WAIT_SLICE_MS = 250;

type Answer = { readonly failure?: string } | { readonly gone: string };

/** The main thread's end of the writer: posts batches and takes their answers. */
export class SqliteWriter {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly counter = new Int32Array(new SharedArrayBuffer(8));
  /** Batches posted and not yet answered. */
  private unanswered = 0;
  private ended = false;

  /**
   * Starts the writer on `file`, which must exist (the main connection created it).
   * `stallMs`: how long a synchronous wait goes without an answer before the writer is
   * given up as hung (longer than any lock it may wait for).
   */
  constructor(
    file: string,
    busyTimeoutMs: number,
    private readonly stallMs: number,
    private readonly events: WriterEvents,
    betterSqlite3: string,
  ) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(WRITER_SOURCE, {
      eval: true,
      workerData: {
        file,
        busyTimeoutMs,
        module: betterSqlite3,
        port: port2,
        counter: this.counter,
        turnColumns: TURN_COLUMNS,
        insertRun: INSERT_RUN,
        lastSequence: LAST_SEQUENCE,
      },
      transferList: [port2],
    });
    this.port.on("message", (answer: Answer) => this.take(answer));
    this.worker.on("error", (error) => this.end(`the writer thread failed: ${error.message}`));
    this.worker.on("exit", (code) => this.end(`the writer thread exited (code ${code})`));
    // Neither keeps the process alive while idle (unref after the listeners, which would hold
    // it again); the port is held while a batch is unanswered, so its commit is not cut off.
    this.worker.unref();
    this.port.unref();
  }

  /** Posts a batch; its answer comes in order, on the event loop or from `drain`. */
  post(batch: EventRuns): void {
    if (this.unanswered++ === 0) this.port.ref();
    this.port.postMessage(batch.message());
  }

  /**
   * Waits until every batch posted has been answered, running `answered` for each here;
   * when the writer dies or hangs meanwhile, `gone` runs instead for what is left.
   */
  drain(): void {
    let waitedSince = Date.now();
    while (this.unanswered > 0 && !this.ended) {
      const seen = Atomics.load(this.counter, ANSWERS);
      const message = receiveMessageOnPort(this.port);
      if (message !== undefined) {
        this.take(message.message as Answer);
        waitedSince = Date.now();
        continue;
      }
      if (Atomics.load(this.counter, GONE) !== 0) {
        this.end("the writer thread exited");
        break;
      }
      Atomics.wait(this.counter, ANSWERS, seen, WAIT_SLICE_MS);
      if (Date.now() - waitedSince > this.stallMs) {
        this.end(`the writer thread gave no answer for ${this.stallMs} ms`);
        break;
      }
    }
  }

  /** Sets the WAL size, in pages, at which the writer's connection checkpoints after a commit. */
  setAutocheckpoint(pages: number): void {
    if (!this.ended) this.port.postMessage({ autocheckpoint: pages });
  }

  /** Waits until every batch is answered, then has the writer close its connection, and waits for that. */
  close(): void {
    this.drain();
    if (this.ended) return;
    this.ended = true;
    this.port.removeAllListeners("message");
    this.worker.removeAllListeners();
    this.worker.on("error", () => undefined);
    const seen = Atomics.load(this.counter, ANSWERS);
    this.port.postMessage("close");
    // The writer answers "close" once its connection is closed; a writer that does not is left behind (it is unref'd).
    if (Atomics.wait(this.counter, ANSWERS, seen, this.stallMs) !== "timed-out") receiveMessageOnPort(this.port);
    this.port.close();
  }

  private take(answer: Answer): void {
    if (this.ended) return;
    if ("gone" in answer) {
      this.end(answer.gone);
      return;
    }
    if (--this.unanswered === 0) this.port.unref();
    this.events.answered(answer.failure);
  }

  /** The writer is gone: answers it gave before still count; nothing more comes. */
  private end(reason: string): void {
    if (this.ended) return;
    // Answers already in the port were given before the writer went.
    for (
      let message = receiveMessageOnPort(this.port);
      message !== undefined && this.unanswered > 0;
      message = receiveMessageOnPort(this.port)
    ) {
      const answer = message.message as Answer;
      if ("gone" in answer) {
        reason = answer.gone;
        break;
      }
      this.take(answer);
    }
    this.ended = true;
    this.unanswered = 0;
    this.port.removeAllListeners("message");
    this.port.close();
    this.worker.removeAllListeners();
    this.worker.on("error", () => undefined);
    void this.worker.terminate();
    this.events.gone(reason);
  }
}

/**
 * The writer thread. Plain CommonJS, evaluated: it runs the same from the TypeScript
 * sources and from the compiled package, and loads the same better-sqlite3 as the store.
 */
const WRITER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { file, busyTimeoutMs, module, port, counter, turnColumns, insertRun, lastSequence } = workerData;
${RUNS_SOURCE}
const ANSWERS = ${ANSWERS};
const GONE = ${GONE};
const answer = (message) => {
  port.postMessage(message);
  Atomics.add(counter, ANSWERS, 1);
  Atomics.notify(counter, ANSWERS);
};
process.on("exit", () => {
  Atomics.store(counter, GONE, 1);
  Atomics.notify(counter, ANSWERS);
});
let db;
let statements;
try {
  const Database = require(module);
  db = new Database(file, { fileMustExist: true, timeout: busyTimeoutMs });
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  statements = {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    rollback: db.prepare("ROLLBACK"),
    insertTurn: db.prepare("INSERT INTO turns (turn_id, thread_id, created_at, ordinal) VALUES (?, ?, ?, (SELECT IFNULL(MAX(ordinal), 0) + 1 FROM turns))"),
    turnExists: db.prepare("SELECT 1 AS one FROM turns WHERE turn_id = ?"),
    lastSequence: db.prepare(lastSequence),
    insertRun: db.prepare(insertRun),
  };
} catch (error) {
  db = undefined;
  answer({ gone: "the writer cannot open " + file + ": " + (error && error.message) });
  port.close();
}

function commit(batch) {
  const { runs, turns } = batch;
  statements.begin.run();
  for (let at = 0; at < turns.length; at += turnColumns) {
    if (statements.turnExists.get(turns[at]) !== undefined) {
      throw new Error("turn " + turns[at] + " was registered by another writer of the file");
    }
    statements.insertTurn.run(turns[at], turns[at + 1], turns[at + 2]);
  }
  insertRuns(statements, runs);
  statements.commit.run();
}

if (db !== undefined) port.on("message", (batch) => {
  if (batch === "close") {
    db.close();
    answer("closed");
    port.close();
    return;
  }
  if (batch.autocheckpoint !== undefined) {
    // Not a batch: nothing is answered.
    try {
      db.pragma("wal_autocheckpoint = " + Number(batch.autocheckpoint));
    } catch {
      // The setting stays as it was; a failing connection fails its next batch.
    }
    return;
  }
  try {
    commit(batch);
    answer({});
  } catch (error) {
    try {
      if (db.inTransaction) statements.rollback.run();
    } catch {
      // The failure answered is the batch's.
    }
    answer({ failure: String((error && error.message) || error) });
  }
});
`;
