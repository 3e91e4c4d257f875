/** Handlers of the delegation route methods. */
import type { Handlers } from "@turnspec/protocol/server";
import type { Connection } from "../views/connections.js";
import type { RouteService } from "../routes/service.js";

export type RouteMethods = "agent/route/create" | "agent/route/list" | "agent/route/revoke";

export function routeHandlers(routes: Pick<RouteService, "create" | "list" | "revoke">): Pick<Handlers<Connection>, RouteMethods> {
  return {
    "agent/route/create": (params) => routes.create(params),
    "agent/route/list": (params) => routes.list(params),
    "agent/route/revoke": (params) => routes.revoke(params),
  };
}
