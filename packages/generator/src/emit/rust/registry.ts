/**
 * registry.rs and ordering.rs: the protocol's tables (methods, notifications, errors) and its
 * ordering rules as static data over the support module's types, the `PROTOCOL` value that
 * the endpoints, the message checker and the testee read, and `ErrorReason`, the registered
 * errors as an enum a handler answers with.
 */
import type { JsonObject, MethodModel, NotificationModel, ProtocolModel } from "../../model.js";
import { namedParams } from "../../compose.js";
import { docLines, indent, pascalIdent, rustInteger, rustString } from "./names.js";

const direction = (d: string) =>
  d === "client_to_server" ? "Direction::ClientToServer" : d === "server_to_client" ? "Direction::ServerToClient" : "Direction::Both";

const STRUCTURE = { "by-name": "ByName", "by-position": "ByPosition", either: "Either" } as const;

/** A message's `Params` entry: its type (if any), whether it may be left out, its structure and, for "either", the names of its positions. */
function params(m: MethodModel | NotificationModel, model: ProtocolModel): string[] {
  const type = m.params === undefined ? undefined : model.types.find((t) => t.title === m.params);
  const names = m.paramStructure === "either" && type ? namedParams(type.schema, type.file, model) : undefined;
  return [
    "params: Params {",
    `    schema: ${m.params === undefined ? "None" : `Some(${rustString(m.params)})`},`,
    `    optional: ${m.paramsOptional},`,
    `    structure: ParamStructure::${STRUCTURE[m.paramStructure]},`,
    `    names: ${names ? `Some(${strList(names)})` : "None"},`,
    "},",
  ];
}

const strList = (items: readonly string[]) => `&[${items.map(rustString).join(", ")}]`;

/** registry.rs. */
export function emitRustRegistry(model: ProtocolModel, header: string): string {
  const reasons = model.errors.map((e) => ({ ...e, ident: pascalIdent(e.reason) }));
  return [
    header,
    `//! The tables of ${model.title} ${model.version}: every method, notification and error, as`,
    "//! protocol.json and errors.json declare them, and the protocol as one value.",
    "",
    "use crate::jsonrpc::protocol::{",
    "    Direction, ErrorEntry, MethodEntry, NotificationEntry, ParamStructure, Params, Protocol,",
    "};",
    "use crate::jsonrpc::{Json, Mode, RoundTripError, RpcError};",
    "use crate::types;",
    "",
    `/// ${model.title}, as the endpoints, the message checker and the testee read it.`,
    "pub static PROTOCOL: Protocol = Protocol {",
    `    title: ${rustString(model.title)},`,
    `    version: ${rustString(model.version)},`,
    `    batches: ${model.batches},`,
    `    digest: ${rustString(model.digest)},`,
    "    methods: METHODS,",
    "    notifications: NOTIFICATIONS,",
    "    errors: ERRORS,",
    "    ordering: crate::ordering::RULES,",
    "    validate: crate::validators::validate::<Json>,",
    "    round_trip,",
    "};",
    "",
    "/// Every method: who sends the request, its params and result types, the errors it may answer with.",
    "pub static METHODS: &[MethodEntry] = &[",
    ...indent(
      model.methods.flatMap((m) => [
        "MethodEntry {",
        `    name: ${rustString(m.name)},`,
        `    direction: ${direction(m.direction)},`,
        ...indent(params(m, model)),
        `    result: ${rustString(m.result)},`,
        `    errors: ${strList(m.errors)},`,
        `    error_data: ${optionalString(m.errorData)},`,
        "},",
      ]),
    ),
    "];",
    "",
    "/// Every notification: who sends it and its params type.",
    "pub static NOTIFICATIONS: &[NotificationEntry] = &[",
    ...indent(
      model.notifications.flatMap((n) => [
        "NotificationEntry {",
        `    name: ${rustString(n.name)},`,
        `    direction: ${direction(n.direction)},`,
        ...indent(params(n, model)),
        "},",
      ]),
    ),
    "];",
    "",
    "/// Every registered error, the standard JSON-RPC ones included.",
    "pub static ERRORS: &[ErrorEntry] = &[",
    ...indent(
      reasons.flatMap((e) => [
        "ErrorEntry {",
        `    reason: ${rustString(e.reason)},`,
        `    code: ${rustInteger(e.code)},`,
        `    any_method: ${e.anyMethod},`,
        `    data: ${optionalString(e.data)},`,
        "},",
      ]),
    ),
    "];",
    "",
    "/// The registered errors, by reason: what a handler answers with.",
    "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]",
    "pub enum ErrorReason {",
    ...indent(reasons.flatMap((e) => [...docLines(e.description || e.message, ""), `${e.ident},`])),
    "}",
    "",
    "impl ErrorReason {",
    "    /// The reason as `error.data.reason` carries it.",
    "    pub fn reason(self) -> &'static str {",
    "        match self {",
    ...indent(
      reasons.map((e) => `ErrorReason::${e.ident} => ${rustString(e.reason)},`),
      3,
    ),
    "        }",
    "    }",
    "",
    "    /// The error's code.",
    "    pub fn code(self) -> i64 {",
    "        match self {",
    ...indent(
      reasons.map((e) => `ErrorReason::${e.ident} => ${rustInteger(e.code)},`),
      3,
    ),
    "        }",
    "    }",
    "",
    "    /// The error to answer with: its code, `message`, and `data.reason`.",
    "    pub fn error(self, message: impl Into<String>) -> RpcError {",
    "        RpcError::registered(self.code(), self.reason(), message)",
    "    }",
    "}",
    "",
    "/// Validates a value as the named type, decodes it into its Rust type and writes that as",
    "/// canonical JSON; `None` when the protocol has no such type.",
    "pub fn round_trip(type_name: &str, value: &Json, mode: Mode) -> Option<Result<String, RoundTripError>> {",
    "    use crate::jsonrpc::round_trip as trip;",
    "    Some(match type_name {",
    ...indent(
      model.types.map((t) => `${rustString(t.title)} => trip::<types::${t.title}>(value, mode),`),
      2,
    ),
    "        _ => return None,",
    "    })",
    "}",
  ].join("\n");
}

/** ordering.rs. */
export function emitRustOrdering(model: ProtocolModel, header: string): string {
  const rules = model.ordering.map((r) => rule(r.rule));
  return [
    header,
    `//! The ordering rules of ${model.title} ${model.version}, as protocol.json declares them, for the`,
    "//! support module's checker: `OrderingChecker::new(RULES)` checks a stream of frames.",
    "",
    ...(rules.length ? ["use crate::jsonrpc::ordering::{KeyPart, Rule, RuleKind};"] : ["use crate::jsonrpc::ordering::Rule;"]),
    "",
    "/// Every ordering rule.",
    ...(rules.length ? ["pub static RULES: &[Rule] = &[", ...indent(rules.flat()), "];"] : ["pub static RULES: &[Rule] = &[];"]),
    "",
    "/// A checker of these rules, before any frame.",
    "pub fn checker() -> crate::jsonrpc::ordering::OrderingChecker {",
    "    crate::jsonrpc::ordering::OrderingChecker::new(RULES)",
    "}",
  ].join("\n");
}

function rule(r: JsonObject): string[] {
  const list = (key: string) => strList((r[key] as string[]) ?? []);
  const scope = (r.scope as { name: string; pointer: string }[]).map(
    (s) => `KeyPart { name: ${rustString(s.name)}, pointer: ${rustString(s.pointer)} },`,
  );
  let kind: string[];
  switch (r.kind) {
    case "precedes":
      kind = ["RuleKind::Precedes {", `    first: ${rustString(r.first as string)},`, `    then: ${list("then")},`, "},"];
      break;
    case "leads":
      kind = ["RuleKind::Leads {", `    notification: ${rustString(r.notification as string)},`, `    before: ${list("before")},`, "},"];
      break;
    case "trails":
      kind = ["RuleKind::Trails {", `    notification: ${rustString(r.notification as string)},`, `    after: ${list("after")},`, "},"];
      break;
    case "single_terminal":
      kind = ["RuleKind::SingleTerminal {", `    terminals: ${list("terminals")},`, `    after: ${list("after")},`, "},"];
      break;
    case "quiet_after":
      kind = [
        "RuleKind::QuietAfter {",
        `    notification: ${rustString(r.notification as string)},`,
        `    quiet: ${list("quiet")},`,
        `    until: ${list("until")},`,
        "},",
      ];
      break;
    case "paired": {
      const open = r.open as { notification: string; key: string };
      const close = r.close as { notification: string; key: string };
      kind = [
        "RuleKind::Paired {",
        `    subject: ${rustString(r.subject as string)},`,
        `    open: (${rustString(open.notification)}, ${rustString(open.key)}),`,
        `    close: (${rustString(close.notification)}, ${rustString(close.key)}),`,
        "},",
      ];
      break;
    }
    case "sequence": {
      const results = (r.results as { method: string; items: string }[]).map((x) => `(${rustString(x.method)}, ${rustString(x.items)})`);
      kind = [
        "RuleKind::Sequence {",
        `    field: ${rustString(r.field as string)},`,
        `    notifications: ${list("notifications")},`,
        `    results: &[${results.join(", ")}],`,
        "},",
      ];
      break;
    }
    default:
      throw new Error(`ordering rule ${String(r.id)}: unknown kind ${String(r.kind)}`);
  }
  kind[0] = `kind: ${kind[0]}`;
  return [
    "Rule {",
    `    id: ${rustString(r.id as string)},`,
    `    requirement: ${rustString(r.requirement as string)},`,
    `    description: ${rustString(r.description as string)},`,
    ...(scope.length ? ["    scope: &[", ...indent(scope, 2), "    ],"] : ["    scope: &[],"]),
    ...indent(kind),
    "},",
  ];
}

/** `Some("…")` for a type name, `None` for none. */
function optionalString(name: string | undefined): string {
  return name === undefined ? "None" : `Some(${rustString(name)})`;
}
