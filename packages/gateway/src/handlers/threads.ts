/** Handlers of the thread methods. */
import type { Handlers } from "@turnspec/protocol/server";
import type { Connection } from "../views/connections.js";
import type { Threads } from "../views/threads.js";

export type ThreadMethods = "thread/start" | "thread/get" | "thread/timeline/page";

export function threadHandlers(
  threads: Pick<Threads, "create" | "thread" | "view" | "timelinePage">,
): Pick<Handlers<Connection>, ThreadMethods> {
  return {
    "thread/start": (params) => ({ thread: threads.view(threads.create(params)) }),
    "thread/get": (params) => ({ thread: threads.view(threads.thread(params.thread_id)) }),
    "thread/timeline/page": (params) => threads.timelinePage(threads.thread(params.threadId).id, params.cursor, params.limit),
  };
}
