/**
 * Child process of the test in sqlite-batch.test.ts: appends more than CHECKPOINT_EVERY
 * events (so the writer and the checkpointing thread both run), writes "committed" once
 * they are, and leaves the store open. The process must then end by itself.
 *
 * Usage: node --import tsx test/store/append-and-leave.ts <file>
 */
import { CHECKPOINT_EVERY, SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";

const [file] = process.argv.slice(2);
if (file === undefined) {
  process.stderr.write("usage: append-and-leave.ts <file>\n");
  process.exit(2);
}
const store = new SqliteEventStore(file);
store.createThread({ id: "thr_a", workspace_id: "wsp_1", cwd: "/w", mode: "Agent", created_at: "2025-01-01T00:00:00Z" });
store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
for (let i = 1; i <= 2 * CHECKPOINT_EVERY; i++) {
  store.append("trn_1", "item/agent_message/delta", (sequence) => ({ turn_id: "trn_1", sequence, delta: `d${i}` }));
  if (i % 1000 === 0) await new Promise((resolve) => setImmediate(resolve));
}
store.afterCommit((failure) => process.stdout.write(failure ? `failed: ${failure.message}\n` : "committed\n"));
