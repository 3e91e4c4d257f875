/** Opens the event store a gateway is configured with: SQLite on a file, or memory for tests. */
import type { EventStore } from "./store.js";
import { MemoryEventStore } from "./memory.js";
import { SqliteEventStore } from "./sqlite.js";

export type OpenStoreOptions = { readonly memory: true } | { readonly file: string };

export function openStore(options: OpenStoreOptions): EventStore {
  return "file" in options ? new SqliteEventStore(options.file) : new MemoryEventStore();
}
