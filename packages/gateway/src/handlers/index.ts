/**
 * Every method handler of the gateway: the union of the per-domain slices. The union is
 * checked at compile time: a method of the protocol no slice serves, or one served by two
 * slices, fails to compile here.
 */
import type { Handlers } from "@turnspec/protocol/server";
import type { ClientMethodName } from "@turnspec/protocol/registry";
import type { Connection } from "../views/connections.js";
import { permissionHandlers, type PermissionMethods } from "./permissions.js";
import { questionHandlers, type QuestionMethods } from "./questions.js";
import { routeHandlers, type RouteMethods } from "./routes.js";
import { withSubscriptions, type SubscriptionPorts } from "./subscriptions.js";
import { threadHandlers, type ThreadMethods } from "./threads.js";
import { turnHandlers, type TurnHandlerPorts, type TurnMethods } from "./turns.js";
import { workHandlers, type WorkHandlerPorts } from "./work.js";
import type { WorkMethods } from "./work.js";

type Slices = [ThreadMethods, TurnMethods, WorkMethods, PermissionMethods, QuestionMethods, RouteMethods];

/** The methods two slices both claim: must be none. */
type Overlaps<S extends unknown[]> = S extends [infer Head, ...infer Tail] ? (Head & Tail[number]) | Overlaps<Tail> : never;

/** Compiles only when the slices are disjoint and cover every method of the protocol. */
type Complete = [Overlaps<Slices>] extends [never] ? ([Exclude<ClientMethodName, Slices[number]>] extends [never] ? true : false) : false;
const complete: Complete = true;
void complete;

export interface HandlerPorts extends TurnHandlerPorts, SubscriptionPorts<Connection> {
  readonly threads: TurnHandlerPorts["threads"] & Parameters<typeof threadHandlers>[0] & SubscriptionPorts<Connection>["threads"];
  readonly log: TurnHandlerPorts["log"] & WorkHandlerPorts["log"];
  readonly approvals: Parameters<typeof permissionHandlers>[0];
  readonly questions: Parameters<typeof questionHandlers>[0];
  readonly routes: Parameters<typeof routeHandlers>[0];
}

export function gatewayHandlers(ports: HandlerPorts): Handlers<Connection> {
  const handlers: Handlers<Connection> = {
    ...threadHandlers(ports.threads),
    ...turnHandlers(ports),
    ...workHandlers(ports),
    ...permissionHandlers(ports.approvals),
    ...questionHandlers(ports.questions),
    ...routeHandlers(ports.routes),
  };
  return withSubscriptions(handlers, ports);
}
