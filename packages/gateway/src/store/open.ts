/** Opens the event store a gateway is configured with: SQLite on a file, PostgreSQL at a URL, or memory for tests. */
import type { EventStore } from "./store.js";
import { MemoryEventStore } from "./memory.js";
import { PostgresEventStore } from "./postgres.js";
import { SqliteEventStore } from "./sqlite.js";

export type OpenStoreOptions = { readonly memory: true } | { readonly file: string } | { readonly url: string };

/** Whether a `--store` value names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

export function openStore(options: OpenStoreOptions): EventStore {
  if ("url" in options) return new PostgresEventStore(options.url);
  return "file" in options ? new SqliteEventStore(options.file) : new MemoryEventStore();
}
