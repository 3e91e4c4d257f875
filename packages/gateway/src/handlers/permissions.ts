/** Handler of the approval answer. */
import type { Handlers } from "@turnspec/protocol/server";
import type { Approvals } from "../flows/approvals.js";
import type { Connection } from "../views/connections.js";

export type PermissionMethods = "turn/permission/request/respond";

export function permissionHandlers(approvals: Pick<Approvals, "respond">): Pick<Handlers<Connection>, PermissionMethods> {
  return { "turn/permission/request/respond": (params) => approvals.respond(params) };
}
