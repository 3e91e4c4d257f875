/**
 * Which thread a method subscribes its connection to, declared once per method: a
 * connection receives the notifications of every thread it has touched. A thread named by
 * the params is followed before the handler runs (so a turn/cancel's own terminal
 * notification reaches the connection that cancelled), once the thread is known to exist;
 * a thread known only from the result is followed once the handler answers.
 */
import type { Handlers } from "@turnspec/protocol/server";
import type { ClientMethodName, ParamsOf, ResultOf } from "@turnspec/protocol/registry";

export type Subscription<M extends ClientMethodName> =
  { readonly params: (params: ParamsOf<M>) => string } | { readonly result: (result: ResultOf<M>) => string };

/** The thread each method subscribes to; a method not listed subscribes to none. */
export const SUBSCRIPTIONS: { readonly [M in ClientMethodName]?: Subscription<M> } = {
  "thread/start": { result: (r) => r.thread.id },
  "thread/get": { params: (p) => p.thread_id },
  "thread/timeline/page": { params: (p) => p.threadId },
  "turn/start": { params: (p) => p.thread_id },
  "turn/get": { params: (p) => p.thread_id },
  "turn/cancel": { params: (p) => p.thread_id },
  "turn/items": { params: (p) => p.thread_id },
  "turn/resume": { params: (p) => p.thread_id },
  "turn/work/page": { params: (p) => p.threadId },
  "turn/work/items/get": { params: (p) => p.threadId },
  "turn/permission/request/respond": { result: (r) => r.thread_id },
  "turn/question/respond": { params: (p) => p.thread_id },
};

export interface SubscriptionPorts<Ctx> {
  /** The connections, which a connection (the context) follows a thread through. */
  readonly connections: { follow(ctx: Ctx, threadId: string): void };
  readonly threads: { exists(threadId: string): boolean };
}

/** The handlers, each following the thread its method subscribes to as SUBSCRIPTIONS declares. */
export function withSubscriptions<Ctx>(handlers: Handlers<Ctx>, ports: SubscriptionPorts<Ctx>): Handlers<Ctx> {
  const wrapped: Record<string, unknown> = { ...handlers };
  for (const [method, rule] of Object.entries(SUBSCRIPTIONS) as [ClientMethodName, Subscription<ClientMethodName>][]) {
    // One place where the method's own types are erased: the table above keeps them per method.
    const handler = handlers[method] as (params: unknown, ctx: Ctx) => unknown;
    wrapped[method] =
      "params" in rule
        ? (params: unknown, ctx: Ctx) => {
            const threadId = (rule.params as (p: unknown) => string)(params);
            if (ports.threads.exists(threadId)) ports.connections.follow(ctx, threadId);
            return handler(params, ctx);
          }
        : (params: unknown, ctx: Ctx) => {
            const follow = (result: unknown) => {
              ports.connections.follow(ctx, (rule.result as (r: unknown) => string)(result));
              return result;
            };
            const answer = handler(params, ctx);
            return answer instanceof Promise ? answer.then(follow) : follow(answer);
          };
  }
  return wrapped as Handlers<Ctx>;
}
