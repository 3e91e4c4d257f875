/**
 * Type-level tests of the generated client, server and types. Never run: test/types/types.test.ts
 * type-checks this file with the generated output and expects no diagnostics. An
 * assertion is either an `Equals` that must be `true`, or a line under `@ts-expect-error`
 * that must not compile (an unused directive is itself a diagnostic).
 */
import type { ProtocolClient } from "../../generated/client.js";
import type { NotificationParamsOf, ParamsOf, ResultOf } from "../../generated/registry.js";
import { createDispatcher, type Handlers } from "../../generated/server.js";
import type * as T from "../../generated/types.js";

/** Exact type equality: `any`, optionality and readonly-ness all count. */
type Equals<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
type Assert<_ extends true> = true;

type ParamsOfMethod<K extends keyof ProtocolClient> = ProtocolClient[K] extends (params: infer P, ...rest: never[]) => unknown ? P : never;
type ReturnOfMethod<K extends keyof ProtocolClient> = ProtocolClient[K] extends (...args: never[]) => infer R ? R : never;

// Each client method takes the generated params type and returns a Promise of the generated result type.
export type ClientMethods = [
  Assert<Equals<ParamsOfMethod<"turnStart">, T.TurnStartParams>>,
  Assert<Equals<ReturnOfMethod<"turnStart">, Promise<T.TurnStartResponse>>>,
  Assert<Equals<ParamsOfMethod<"turnCancel">, T.TurnCancelParams>>,
  Assert<Equals<ReturnOfMethod<"turnCancel">, Promise<T.TurnCancelResponse>>>,
  Assert<Equals<ParamsOfMethod<"turnItems">, T.TurnItemsParams>>,
  Assert<Equals<ReturnOfMethod<"turnItems">, Promise<T.TurnItemsResponse>>>,
  Assert<Equals<ParamsOfMethod<"turnWorkPage">, T.TurnWorkPageParams>>,
  Assert<Equals<ReturnOfMethod<"turnWorkPage">, Promise<T.TurnWorkPageResponse>>>,
  Assert<Equals<ParamsOfMethod<"turnPermissionRequestRespond">, T.TurnPermissionRequestRespondParams>>,
  Assert<Equals<ReturnOfMethod<"turnPermissionRequestRespond">, Promise<T.TurnPermissionRequestRespondResponse>>>,
  Assert<Equals<ParamsOfMethod<"threadGet">, T.ThreadGetParams>>,
  Assert<Equals<ReturnOfMethod<"threadGet">, Promise<T.ThreadGetResponse>>>,
  // The two methods whose result is a projection, not a response type of their own.
  Assert<Equals<ReturnOfMethod<"agentRouteCreate">, Promise<T.AgentDelegationRouteProjection>>>,
  Assert<Equals<ReturnOfMethod<"agentRouteRevoke">, Promise<T.AgentDelegationRouteProjection>>>,
];

// The registry's lookups agree with the named types.
export type RegistryLookups = [
  Assert<Equals<ParamsOf<"turn/start">, T.TurnStartParams>>,
  Assert<Equals<ResultOf<"turn/start">, T.TurnStartResponse>>,
  Assert<Equals<ParamsOf<"turn/permission/request/respond">, T.TurnPermissionRequestRespondParams>>,
  Assert<Equals<NotificationParamsOf<"turn/started">, T.TurnStartedNotification>>,
  Assert<Equals<NotificationParamsOf<"item/agent_message/delta">, T.ItemDeltaNotification>>,
];

// The wire's null-versus-absent distinction survives into the types.
export type Nullability = [
  Assert<Equals<T.Turn["prompt_manifest"], T.PromptManifest | null>>,
  Assert<Equals<Pick<T.Turn, "completed_at">, { completed_at?: string }>>,
];

// The equality helper itself can say no.
// @ts-expect-error TurnGetParams is not TurnStartParams
export type EqualsCanFail = Assert<Equals<ParamsOf<"turn/start">, T.TurnGetParams>>;

declare const client: ProtocolClient;

const startParams: T.TurnStartParams = {
  thread_id: "thr_000000000000000001",
  turn_id: "trn_000000000000000001",
  permission_profile: { mode: "supervised" },
  input: [{ type: "text", text: "Inspect the project and summarize the architecture.", textElements: [] }],
};

export async function calls(): Promise<void> {
  const started = await client.turnStart(startParams);
  const status: T.TurnStatus = started.turn.status;
  void status;
  // The generic request is typed by the method name too.
  const viaRequest = await client.request("turn/get", { thread_id: "thr_000000000000000001", turn_id: "trn_000000000000000001" });
  const sameResult: Equals<typeof viaRequest, T.TurnGetResponse> = true;
  void sameResult;

  // @ts-expect-error input is required
  await client.turnStart({ thread_id: "thr_000000000000000001", turn_id: "trn_000000000000000002" });
  // @ts-expect-error "admin" is not a permission mode
  await client.turnStart({ ...startParams, permission_profile: { mode: "admin" } });
  // @ts-expect-error a client may not send the gateway-only resolution "expired"
  await client.turnPermissionRequestRespond({ request_id: "perm_000000000000000001", resolution: "expired" });
  // @ts-expect-error turn/started is a notification, not a method
  await client.request("turn/started", startParams);
}

export function subscriptions(): void {
  client.on("turn/started", (p) => {
    const same: Equals<typeof p, T.TurnStartedNotification> = true;
    void same;
  });
  client.on("item/agent_message/delta", (p) => {
    const same: Equals<typeof p, T.ItemDeltaNotification> = true;
    void same;
  });
  // @ts-expect-error turn/started does not carry an ItemDeltaNotification
  client.on("turn/started", (p: T.ItemDeltaNotification) => void p.delta);
  // @ts-expect-error turn/start is a method, not a notification
  client.on("turn/start", () => undefined);
  client.onAny((n) => {
    if (n.method === "turn/completed") {
      const same: Equals<typeof n.params, T.TurnCompletedNotification> = true;
      void same;
    }
  });
}

declare const handlers: Handlers;

export function servers(): void {
  createDispatcher(handlers);
  createDispatcher<void>({
    ...handlers,
    "turn/start": async (params) => {
      const same: Equals<typeof params, T.TurnStartParams> = true;
      void same;
      throw new Error("not needed at the type level");
    },
  });
  const { "turn/cancel": _cancel, ...withoutCancel } = handlers;
  // @ts-expect-error turn/cancel has no handler
  createDispatcher(withoutCancel);
  // @ts-expect-error turn/cancel has no handler
  const incomplete: Handlers = withoutCancel;
  void incomplete;
  // @ts-expect-error turn/fork is not a method of the protocol
  createDispatcher({ ...handlers, "turn/fork": async () => ({}) });
  // @ts-expect-error turn/started is a notification the gateway sends, not a method it serves
  createDispatcher({ ...handlers, "turn/started": async () => ({}) });
  // @ts-expect-error turn/get must return a TurnGetResponse, not a thread
  createDispatcher({ ...handlers, "turn/get": async () => ({ thread: { id: "thr_000000000000000001" } }) });
}

/** UserInput narrows by its `type` tag, and the switch is exhaustive. */
export function describeInput(input: T.UserInput): string {
  switch (input.type) {
    case "text": {
      const same: Equals<typeof input, T.UserInputText> = true;
      void same;
      return input.text;
    }
    case "localFile":
    case "localImage":
      return input.path;
    case "image":
      return input.url;
    case "artifact":
      return input.artifactId;
    case "mention":
      return `${input.name} (${input.path})`;
    case "file":
      return input.name ?? input.url;
    case "audio":
    case "video":
      return input.mimeType ?? input.url;
    default: {
      const exhaustive: never = input;
      return exhaustive;
    }
  }
}

export function narrowingIsReal(input: T.UserInput): string {
  if (input.type === "artifact") {
    // @ts-expect-error an artifact input has no text
    return input.text;
  }
  // @ts-expect-error before narrowing, not every input has a path
  return input.path;
}
