/** Handlers of the work view methods: a page of rows, rows by id. Each costs what it returns. */
import type { Handlers } from "@turnspec/protocol/server";
import { invalidParams } from "@turnspec/rpc";
import type { Connection } from "../views/connections.js";
import type { TurnLog } from "../log/turn-log.js";
import type { Threads } from "../views/threads.js";
import { pageWork, WorkCursorError, workItemsGet, type WorkFold } from "../views/work.js";

export type WorkMethods = "turn/work/page" | "turn/work/items/get";

export interface WorkHandlerPorts {
  readonly threads: Pick<Threads, "turnOf">;
  /** The turn's work fold, caught up with the log. */
  readonly log: Pick<TurnLog<WorkFold>, "fold">;
}

export function workHandlers({ threads, log }: WorkHandlerPorts): Pick<Handlers<Connection>, WorkMethods> {
  const viewOf = (threadId: string, turnId: string) => {
    threads.turnOf(threadId, turnId);
    // A turn the log holds has its turn/started, so it has a view.
    return log.fold(threadId, turnId).view()!;
  };
  return {
    "turn/work/page": (params) => {
      const view = viewOf(params.threadId, params.turnId);
      let page;
      try {
        page = pageWork(view, params);
      } catch (error) {
        if (!(error instanceof WorkCursorError)) throw error;
        throw invalidParams("turn/work/page", error.message, [{ pointer: error.pointer, message: error.message }]);
      }
      return {
        workspaceId: view.workspaceId,
        threadId: view.threadId,
        turnId: view.turnId,
        ...view.freshness,
        work: view.block,
        items: page.items,
        page: page.page,
      };
    },
    "turn/work/items/get": (params) => {
      const view = viewOf(params.threadId, params.turnId);
      return {
        workspaceId: view.workspaceId,
        threadId: view.threadId,
        turnId: view.turnId,
        ...view.freshness,
        ...workItemsGet(view, params.workItemIds),
      };
    },
  };
}
