/**
 * Child process of the SIGKILL test in store.test.ts: appends events to an existing turn
 * forever, and once an event is committed (`afterCommit`) writes its sequence as one line
 * to stdout, as the gateway sends a frame only then. The appends come in bursts of varying
 * length between yields to the event loop, so groups end both on setImmediate and at the
 * group limit. The test kills it with SIGKILL at an arbitrary moment.
 *
 * Usage: node --import tsx test/store/append-until-killed.ts <file> <turn id>
 */
import { writeSync } from "node:fs";
import { SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";

const [file, turnId] = process.argv.slice(2);
if (file === undefined || turnId === undefined) {
  process.stderr.write("usage: append-until-killed.ts <file> <turn id>\n");
  process.exit(2);
}

const store = new SqliteEventStore(file);

/** Writes a line to stdout, a pipe the parent may be slow to read: a full pipe (EAGAIN) is waited out. Lines are shorter than PIPE_BUF, so each write is whole. */
function writeLine(line: string): void {
  for (;;) {
    try {
      writeSync(1, line);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
    }
  }
}
// A payload of a few KB per event makes each commit write several pages, so the kill is
// likely to land in the middle of one.
const delta = "δ".repeat(2048);
for (let burst = 0; ; burst++) {
  for (let i = 0; i <= (burst * 37) % 400; i++) {
    const event = store.append(turnId, "item/agent_message/delta", (sequence) => ({ turn_id: turnId, sequence, delta }));
    store.afterCommit((failure) => {
      if (failure) throw failure;
      // writeSync: the line must be out before anything else happens, not queued in a
      // stream buffer that dies with the process.
      writeLine(`${event.sequence}\n`);
    });
  }
  await new Promise((resolve) => setImmediate(resolve));
}
