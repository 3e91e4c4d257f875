/**
 * The methods and notifications as each end of a Go connection sees them: which side sends
 * each (a message either side may send belongs to both), and the params a Go signature takes
 * (none for a message that carries no params).
 */
import type { ErrorModel, MethodModel, NotificationModel, ProtocolModel } from "../../model.js";

type Sent = { readonly direction: MethodModel["direction"] };

/** Whether the client sends it (a client's request or notification, or one either side sends). */
export const sentByClient = (m: Sent): boolean => m.direction !== "server_to_client";

/** Whether the server sends it. */
export const sentByServer = (m: Sent): boolean => m.direction !== "client_to_server";

/** The title of a message's params type, or undefined when a frame of it carries no params. */
export function paramsOf(m: MethodModel | NotificationModel): string | undefined {
  const params: string | undefined = m.params;
  return params;
}

/** The Go expression of a message's direction. */
export function goDirection(m: Sent): string {
  return m.direction === "client_to_server"
    ? "jsonrpc.ClientToServer"
    : m.direction === "server_to_client"
      ? "jsonrpc.ServerToClient"
      : "jsonrpc.Both";
}

/** How a Go end speaks one message: the code of its typed parts. */
export interface Speaking {
  /** The registry constant of the method or notification (`MethodThreadStart`). */
  readonly constant: string;
  /** The Go name of the method (`ThreadStart`). */
  readonly name: string;
  readonly params: string | undefined;
  /** The reader and writer expressions of the params' named type. */
  readonly readParams?: string;
  readonly writeParams?: (value: string) => string;
}

/** A handler's method in an interface: `Name(ctx context.Context, params P) (R, error)`. */
export function handlerMethod(s: Speaking, result: string): string {
  return `${s.name}(ctx context.Context${s.params === undefined ? "" : `, params ${s.params}`}) (${result}, error)`;
}

/** The registration of a handler on a jsonrpc.Conn, `conn.Handle(…)`. */
export function handleRegistration(conn: string, s: Speaking, writeResult: string, handler: string): string {
  const typed =
    s.params === undefined
      ? `jsonrpc.HandleWithoutParams(${writeResult}, ${handler})`
      : `jsonrpc.Handle(${s.readParams!}, ${writeResult}, ${handler})`;
  return `${conn}.Handle(${s.constant}, ${typed})`;
}

/** A method that sends a request and reads its result. */
export function callMethod(receiver: string, conn: string, s: Speaking, resultType: string, readResult: string, doc: string[]): string[] {
  const params = s.params === undefined ? "jsonrpc.Value{}" : s.writeParams!("params");
  return [
    ...doc,
    `func (${receiver}) ${s.name}(ctx context.Context${s.params === undefined ? "" : `, params ${s.params}`}) (${resultType}, error) {`,
    `\treturn jsonrpc.Call(ctx, ${conn}, ${s.constant}, ${params}, ${readResult})`,
    "}",
  ];
}

/** A method that sends a notification. */
export function notifyMethod(receiver: string, conn: string, s: Speaking, doc: string[]): string[] {
  const params = s.params === undefined ? "jsonrpc.Value{}" : s.writeParams!("params");
  return [
    ...doc,
    `func (${receiver}) Notify${s.name}(ctx context.Context${s.params === undefined ? "" : `, params ${s.params}`}) error {`,
    `\treturn ${conn}.Notify(ctx, ${s.constant}, ${params})`,
    "}",
  ];
}

/** A method that subscribes to a notification. */
export function onMethod(receiver: string, conn: string, s: Speaking, doc: string[]): string[] {
  if (s.params === undefined)
    return [
      ...doc,
      `func (${receiver}) On${s.name}(f func()) func() {`,
      `\treturn ${conn}.On(${s.constant}, func(*jsonrpc.Value) { f() })`,
      "}",
    ];
  return [
    ...doc,
    `func (${receiver}) On${s.name}(f func(${s.params})) func() {`,
    `\treturn jsonrpc.Subscribe(${conn}, ${s.constant}, ${s.readParams!}, f)`,
    "}",
  ];
}

/** Whether frames of the protocol may be JSON-RPC batches: what the model says, else JSON-RPC's yes. */
export function batchesAllowed(model: ProtocolModel): boolean {
  return (model as ProtocolModel & { readonly batches?: boolean }).batches ?? true;
}

/** The type of an error's data, when the registry gives one. */
export function errorDataOf(e: ErrorModel): string | undefined {
  return (e as ErrorModel & { readonly data?: string }).data;
}

/** The type of error.data of any error a method answers with, when the protocol gives one. */
export function methodErrorData(m: MethodModel): string | undefined {
  return (m as MethodModel & { readonly errorData?: string }).errorData;
}

/**
 * How a message's frame carries its params, as jsonrpc.ParamsFrame: whether they may be left
 * out (when the model says; a model that says nothing reads them as the empty object) and
 * their structure, with the names of positional params of an "either" message in order.
 * Empty for the default.
 */
export function paramsFrame(m: MethodModel | NotificationModel, model: ProtocolModel): string {
  const facts = m as (MethodModel | NotificationModel) & { readonly paramsOptional?: boolean; readonly paramStructure?: string };
  const parts: string[] = [];
  if (facts.paramsOptional !== undefined) parts.push(`Absent: ${facts.paramsOptional ? "jsonrpc.AbsentAllowed" : "jsonrpc.AbsentRefused"}`);
  const structure = facts.paramStructure;
  if (structure !== undefined && structure !== "by-name") {
    parts.push(`Structure: ${JSON.stringify(structure)}`);
    const params = paramsOf(m);
    const schema = params === undefined ? undefined : model.types.find((t) => t.title === params)?.schema;
    const properties =
      schema && typeof schema.properties === "object" && schema.properties !== null && !Array.isArray(schema.properties)
        ? Object.keys(schema.properties)
        : undefined;
    if (structure === "either" && properties) parts.push(`Names: []string{${properties.map((p) => JSON.stringify(p)).join(", ")}}`);
  }
  return parts.length ? `jsonrpc.ParamsFrame{${parts.join(", ")}}` : "";
}
