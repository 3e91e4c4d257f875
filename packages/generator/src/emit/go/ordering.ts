/**
 * ordering.go: the protocol's ordering rules as Go data (the explicit form protocol.json's
 * ordering section is expanded into), for the ordering engine of the support package.
 */
import type { Json, JsonObject, ProtocolModel } from "../../model.js";
import { CELL } from "./gofmt.js";
import { goString } from "./names.js";

const KINDS: Record<string, string> = {
  precedes: "jsonrpc.Precedes",
  leads: "jsonrpc.Leads",
  trails: "jsonrpc.Trails",
  single_terminal: "jsonrpc.SingleTerminal",
  quiet_after: "jsonrpc.QuietAfter",
  paired: "jsonrpc.Paired",
  sequence: "jsonrpc.Sequence",
};

const strings = (value: Json | undefined): string => `[]string{${((value as string[] | undefined) ?? []).map(goString).join(", ")}}`;

function ruleFields(rule: JsonObject): [string, string][] {
  const scope = (rule.scope as { name: string; pointer: string }[])
    .map((p) => `{Name: ${goString(p.name)}, Pointer: ${goString(p.pointer)}}`)
    .join(", ");
  const fields: [string, string][] = [
    ["ID", goString(rule.id as string)],
    ["Requirement", goString(rule.requirement as string)],
    ["Description", goString(rule.description as string)],
    ["Kind", KINDS[rule.kind as string] ?? `jsonrpc.RuleKind(${goString(rule.kind as string)})`],
    ["Scope", `[]jsonrpc.KeyPart{${scope}}`],
  ];
  const end = (value: Json | undefined) => {
    const e = value as { notification: string; key: string };
    return `jsonrpc.PairEnd{Notification: ${goString(e.notification)}, Key: ${goString(e.key)}}`;
  };
  switch (rule.kind) {
    case "precedes":
      fields.push(["First", goString(rule.first as string)], ["Then", strings(rule.then)]);
      break;
    case "leads":
      fields.push(["Notification", goString(rule.notification as string)], ["Before", strings(rule.before)]);
      break;
    case "trails":
      fields.push(["Notification", goString(rule.notification as string)], ["After", strings(rule.after)]);
      break;
    case "single_terminal":
      fields.push(["Terminals", strings(rule.terminals)], ["After", strings(rule.after)]);
      break;
    case "quiet_after":
      fields.push(["Notification", goString(rule.notification as string)], ["Quiet", strings(rule.quiet)], ["Until", strings(rule.until)]);
      break;
    case "paired":
      fields.push(["Subject", goString(rule.subject as string)], ["Open", end(rule.open)], ["Close", end(rule.close)]);
      break;
    case "sequence": {
      const results = ((rule.results as { method: string; items: string }[] | undefined) ?? [])
        .map((r) => `{Method: ${goString(r.method)}, Items: ${goString(r.items)}}`)
        .join(", ");
      fields.push(
        ["Field", goString(rule.field as string)],
        ["Notifications", strings(rule.notifications)],
        ["Results", `[]jsonrpc.ResultItems{${results}}`],
      );
      break;
    }
  }
  return fields;
}

export function orderingFile(model: ProtocolModel): string {
  const out: string[] = [];
  out.push("// OrderingRules are the protocol's rules on the order of its notifications.");
  if (model.ordering.length === 0) out.push("var OrderingRules = []jsonrpc.OrderingRule{}");
  else {
    out.push("var OrderingRules = []jsonrpc.OrderingRule{");
    for (const rule of model.ordering) {
      out.push("\t{");
      for (const [key, value] of ruleFields(rule.rule)) out.push(`\t\t${key}:${CELL}${value},`);
      out.push("\t},");
    }
    out.push("}");
  }
  out.push(
    "",
    "// NewOrderingChecker checks the protocol's ordering rules on the frames of one connection.",
    "func NewOrderingChecker() *jsonrpc.OrderingChecker {",
    "\treturn jsonrpc.NewOrderingChecker(OrderingRules)",
    "}",
  );
  return out.join("\n");
}
