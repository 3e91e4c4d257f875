/**
 * registry.go: the protocol's method, notification and error tables as Go constants and one
 * jsonrpc.Protocol (what the client, the server, the message checker and the ordering checker
 * read), and ProtocolError for a handler's registered errors.
 */
import type { NotificationModel, ProtocolModel } from "../../model.js";
import { batchesAllowed, errorDataOf, goDirection, methodErrorData, paramsFrame, paramsOf } from "./messages.js";
import { CELL } from "./gofmt.js";
import { comment, exported, goString, NameSet } from "./names.js";
import type { GoShapes } from "./shapes.js";

/** The Go names of the methods (`ThreadStart`), notifications and error reasons, unique and clear of the declarations. */
export interface RegistryNames {
  readonly method: ReadonlyMap<string, string>;
  readonly notification: ReadonlyMap<string, string>;
  readonly reason: ReadonlyMap<string, string>;
}

export function registryNames(model: ProtocolModel): RegistryNames {
  // The names the client's and the server's own methods take.
  const methods = new NameSet(["Close", "Done", "Conn", "Serve", "OnAny"]);
  const notifications = new NameSet();
  const reasons = new NameSet();
  return {
    method: new Map(model.methods.map((m) => [m.name, methods.take(exported(m.name, "Call"))])),
    notification: new Map(model.notifications.map((n) => [n.name, notifications.take(exported(n.name, "Event"))])),
    reason: new Map(model.errors.map((e) => [e.reason, reasons.take(exported(e.reason, "Error"))])),
  };
}

export function registryFile(model: ProtocolModel, _shapes: GoShapes): string {
  const names = registryNames(model);
  const out: string[] = [];
  if (model.methods.length) {
    out.push("// The methods, by the name each is sent as.", "const (");
    for (const m of model.methods)
      out.push(
        ...comment(`Method${names.method.get(m.name)} — ${m.summary}`, "\t"),
        `\tMethod${names.method.get(m.name)}${CELL}= ${goString(m.name)}`,
      );
    out.push(")", "");
  }
  if (model.notifications.length) {
    out.push("// The notifications, by the name each is sent as.", "const (");
    for (const n of model.notifications)
      out.push(...notificationDoc(n, names), `\tNotification${names.notification.get(n.name)}${CELL}= ${goString(n.name)}`);
    out.push(")", "");
  }
  out.push(
    "// ErrorReason is the data.reason of a registered error.",
    "type ErrorReason string",
    "",
    "// The registered errors, by reason.",
    "const (",
  );
  for (const e of model.errors) {
    out.push(
      ...comment(`Reason${names.reason.get(e.reason)} (${e.code}) — ${e.description}`, "\t"),
      `\tReason${names.reason.get(e.reason)}${CELL}ErrorReason${CELL}= ${goString(e.reason)}`,
    );
  }
  out.push(")", "");
  out.push(
    ...comment(
      `Protocol is ${model.title} ${model.version} as a connection knows it: its methods, notifications and errors, the validation of its types and its ordering rules.`,
    ),
    "var Protocol = jsonrpc.NewProtocol(jsonrpc.Tables{",
    `\tTitle:${CELL}${goString(model.title)},`,
    `\tVersion:${CELL}${goString(model.version)},`,
    "\tMethods: []jsonrpc.MethodInfo{",
  );
  for (const m of model.methods) {
    const errorData = methodErrorData(m);
    const frame = paramsFrame(m, model);
    out.push(
      `\t\t{Name: ${goString(m.name)}, Direction: ${goDirection(m)}, Params: ${goString(paramsOf(m) ?? "")}${frame ? `, Frame: ${frame}` : ""}, Result: ${goString(m.result)}, Errors: []string{${m.errors.map(goString).join(", ")}}${errorData === undefined ? "" : `, ErrorData: ${goString(errorData)}`}},`,
    );
  }
  out.push("\t},", "\tNotifications: []jsonrpc.NotificationInfo{");
  for (const n of model.notifications) {
    const frame = paramsFrame(n, model);
    out.push(
      `\t\t{Name: ${goString(n.name)}, Direction: ${goDirection(n)}, Params: ${goString(paramsOf(n) ?? "")}${frame ? `, Frame: ${frame}` : ""}},`,
    );
  }
  out.push("\t},", "\tErrors: []jsonrpc.ErrorInfo{");
  for (const e of model.errors) {
    const data = errorDataOf(e);
    out.push(
      `\t\t{Reason: ${goString(e.reason)}, Code: ${e.code}, Message: ${goString(e.message)}, AnyMethod: ${e.anyMethod}${data === undefined ? "" : `, Data: ${goString(data)}`}},`,
    );
  }
  out.push("\t},", `\tValidate:${CELL}ValidateType,`, `\tOrdering:${CELL}OrderingRules,`);
  if (!batchesAllowed(model)) out.push(`\tNoBatches:${CELL}true,`);
  out.push("})", "");
  out.push(
    "// ProtocolError is the error of a registered reason for a handler to return: its code from",
    "// the registry, the message (the registry's when empty) and data, with the reason added.",
    "func ProtocolError(reason ErrorReason, message string, data ...jsonrpc.Member) *jsonrpc.Error {",
    "\treturn Protocol.NewError(string(reason), message, data...)",
    "}",
  );
  return out.join("\n");
}

function notificationDoc(n: NotificationModel, names: RegistryNames): string[] {
  return comment(`Notification${names.notification.get(n.name)} — ${n.summary}`, "\t");
}
