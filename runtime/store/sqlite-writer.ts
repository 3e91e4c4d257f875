/**
 * The writer of the SQLite store (sqlite.ts): a worker thread with its own connection to
 * the file that commits the store's batches of appends, so that neither the inserts nor
 * the commit run on the event loop.
 *
 * A batch is posted as one message of flat arrays (cheap to clone: no object per row) and
 * the writer answers each in the order posted. For each batch it takes the write lock
 * (BEGIN IMMEDIATE), inserts the new turns, checks that each turn's first event in the
 * batch follows the highest sequence the file holds (the main thread hands sequences out
 * without reading them under the lock, so this check is what keeps them gap-free and
 * duplicate-free against another writer or an earlier batch of the turn that failed),
 * inserts the events, commits, and answers. A batch that fails is rolled back whole and
 * answered with the reason.
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
 * One batch as it is posted: cheap to clone, as a few flat arrays with no object per
 * event, and each turn id, thread id, method and time named once (in `names`) however many
 * events repeat it.
 */
export interface WriterMessage {
  readonly names: readonly string[];
  /**
   * Per event, EVENT_INTS numbers: its turn, sequence, thread, method and time (indices into
   * `names`, but the sequence), and where its params end in `params`.
   */
  readonly ints: readonly number[];
  /** The params of every event as stored, one after the other: one string clones at memory speed, where many are cloned one by one. */
  readonly params: string;
  /** turn_id, thread_id, created_at per turn registered in the batch. */
  readonly turns: readonly string[];
}

/** The numbers of one event in a WriterMessage. */
const EVENT_INTS = 6;

/** Builds the message of a batch, one event at a time. */
export class WriterBatch {
  private readonly names: string[] = [];
  private readonly ints: number[] = [];
  private readonly params: string[] = [];
  private paramsLength = 0;
  readonly turns: string[] = [];
  private readonly index = new Map<string, number>();
  // The previous event's names: consecutive events mostly share them, and an identity check is cheaper than a lookup.
  private lastTurn: string | undefined;
  private lastTurnName = 0;
  private lastThreadName = 0;
  private lastMethod: string | undefined;
  private lastMethodName = 0;
  private lastTime: string | undefined;
  private lastTimeName = 0;

  get events(): number {
    return this.params.length;
  }

  add(turnId: string, sequence: number, threadId: string, method: string, params: string, recordedAt: string): void {
    if (turnId !== this.lastTurn) {
      this.lastTurn = turnId;
      this.lastTurnName = this.name(turnId);
      this.lastThreadName = this.name(threadId);
    }
    if (method !== this.lastMethod) {
      this.lastMethod = method;
      this.lastMethodName = this.name(method);
    }
    // Times change every millisecond: compared with the last one only, never indexed.
    if (recordedAt !== this.lastTime) {
      this.lastTime = recordedAt;
      this.lastTimeName = this.names.push(recordedAt) - 1;
    }
    this.paramsLength += params.length;
    this.ints.push(this.lastTurnName, sequence, this.lastThreadName, this.lastMethodName, this.lastTimeName, this.paramsLength);
    this.params.push(params);
  }

  message(): WriterMessage {
    return { names: this.names, ints: this.ints, params: this.params.join(""), turns: this.turns };
  }

  private name(text: string): number {
    let at = this.index.get(text);
    if (at === undefined) {
      at = this.names.push(text) - 1;
      this.index.set(text, at);
    }
    return at;
  }
}

/** The values of one event row. */
export const EVENT_COLUMNS = 6;
/** The values of one new turn. */
export const TURN_COLUMNS = 3;
/** Events per multi-row insert of the writer. */
export const INSERT_BATCH = 64;

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
      workerData: { file, busyTimeoutMs, module: betterSqlite3, port: port2, counter: this.counter, columns: EVENT_COLUMNS, ints: EVENT_INTS, turnColumns: TURN_COLUMNS, insertBatch: INSERT_BATCH },
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
  post(batch: WriterBatch): void {
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
    for (let message = receiveMessageOnPort(this.port); message !== undefined && this.unanswered > 0; message = receiveMessageOnPort(this.port)) {
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
const { file, busyTimeoutMs, module, port, counter, columns, ints: eventInts, turnColumns, insertBatch } = workerData;
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
  const row = "(" + Array(columns).fill("?").join(", ") + ")";
  statements = {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    rollback: db.prepare("ROLLBACK"),
    insertTurn: db.prepare("INSERT INTO turns (turn_id, thread_id, created_at, ordinal) VALUES (?, ?, ?, (SELECT IFNULL(MAX(ordinal), 0) + 1 FROM turns))"),
    turnExists: db.prepare("SELECT 1 AS one FROM turns WHERE turn_id = ?"),
    lastSequence: db.prepare("SELECT IFNULL(MAX(sequence), 0) AS last FROM events WHERE turn_id = ?"),
    insertEvent: db.prepare("INSERT INTO events (turn_id, sequence, thread_id, method, params, recorded_at) VALUES " + row),
    insertEvents: db.prepare("INSERT INTO events (turn_id, sequence, thread_id, method, params, recorded_at) VALUES " + Array(insertBatch).fill(row).join(", ")),
    // The same rows when they share their turn, thread and method (a streamed answer's
    // deltas): those are bound once, not once per row, which costs the writer about a fifth
    // less per event.
    insertEventsOfOne: db.prepare(
      "INSERT INTO events (turn_id, sequence, thread_id, method, params, recorded_at) SELECT ?, column1, ?, ?, column2, column3 FROM (VALUES " +
        Array(insertBatch).fill("(?, ?, ?)").join(", ") + ")",
    ),
  };
} catch (error) {
  db = undefined;
  answer({ gone: "the writer cannot open " + file + ": " + (error && error.message) });
  port.close();
}

function commit(batch) {
  const { names, ints, params, turns } = batch;
  statements.begin.run();
  for (let at = 0; at < turns.length; at += turnColumns) {
    if (statements.turnExists.get(turns[at]) !== undefined) {
      throw new Error("turn " + turns[at] + " was registered by another writer of the file");
    }
    statements.insertTurn.run(turns[at], turns[at + 1], turns[at + 2]);
  }
  // Each turn's first event in the batch must follow what the file holds of it.
  const seen = new Set();
  for (let at = 0; at < ints.length; at += eventInts) {
    if (seen.has(ints[at])) continue;
    seen.add(ints[at]);
    const turnId = names[ints[at]];
    const first = ints[at + 1];
    const last = statements.lastSequence.get(turnId).last;
    if (first !== last + 1) {
      throw new Error(
        "turn " + turnId + " would get sequence " + first + " but the file holds it up to " + last +
          (first > last + 1 ? ": an earlier commit of the turn failed" : ": another writer appended to the turn"),
      );
    }
  }
  // Event i's params end at ints[i * eventInts + 5] and start where event i - 1's end.
  const paramsOf = (event) => params.slice(event === 0 ? 0 : ints[event * eventInts - 1], ints[event * eventInts + 5]);
  const values = [];
  const row = (event) => {
    const at = event * eventInts;
    values.push(names[ints[at]], ints[at + 1], names[ints[at + 2]], names[ints[at + 3]], paramsOf(event), names[ints[at + 4]]);
  };
  const events = ints.length / eventInts;
  let event = 0;
  for (; event + insertBatch <= events; ) {
    values.length = 0;
    const end = event + insertBatch;
    const first = event * eventInts;
    let ofOne = true;
    for (let at = first + eventInts; ofOne && at < end * eventInts; at += eventInts) {
      ofOne = ints[at] === ints[first] && ints[at + 2] === ints[first + 2] && ints[at + 3] === ints[first + 3];
    }
    if (ofOne) {
      values.push(names[ints[first]], names[ints[first + 2]], names[ints[first + 3]]);
      for (; event < end; event++) {
        const at = event * eventInts;
        values.push(ints[at + 1], paramsOf(event), names[ints[at + 4]]);
      }
      statements.insertEventsOfOne.run(values);
    } else {
      for (; event < end; event++) row(event);
      statements.insertEvents.run(values);
    }
  }
  for (; event < events; event++) {
    values.length = 0;
    row(event);
    statements.insertEvent.run(values);
  }
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
