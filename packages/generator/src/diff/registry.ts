/**
 * Registry changes: the method and notification table of protocol.json, the error
 * registry and the ordering rules. A removed or redirected message, a changed error code
 * or reason, a method's error list changed either way, a params or result type replaced
 * by one that is not structurally equal, and an ordering rule added or tightened break
 * deployed or certified peers.
 */
import type {
  Direction,
  ErrorModel,
  Json,
  MethodModel,
  NotificationModel,
  OrderingRuleModel,
  ParamStructure,
  ProtocolModel,
} from "../model.js";
import { structurallyEqual } from "./canonical.js";
import { equivalent } from "./compare.js";
import type { RuleId } from "./rules.js";
import type { Change } from "./report.js";
import { ROLE_OF_SENDER, otherRole } from "./report.js";
import { sample } from "./sample.js";

type Message = (MethodModel | NotificationModel) & { readonly result?: string };

const where = (model: ProtocolModel, kind: "methods" | "notifications", name: string, tail = "") => {
  const list: readonly Message[] = kind === "methods" ? model.methods : model.notifications;
  const index = list.findIndex((m) => m.name === name);
  return index === -1 ? null : { file: "protocol.json", pointer: `/${kind}/${index}${tail}` };
};

const fileOf = (model: ProtocolModel, title: string) => model.types.find((t) => t.title === title)!.file;

function change(fields: Omit<Change, "category" | "subject" | "rule"> & { subject?: string; rule: RuleId }): Change {
  return { category: "wire", subject: fields.subject ?? "registry", ...fields };
}

type Side = "client" | "server";
/** The sides that send a message of a direction. */
const sendersOf = (d: Direction): Side[] => (d === "both" ? ["client", "server"] : d === "client_to_server" ? ["client"] : ["server"]);
const other = (side: Side): Side => (side === "client" ? "server" : "client");
const STRUCTURE_WORDS: Record<ParamStructure, string> = {
  "by-name": "by name (an object)",
  "by-position": "by position (an array)",
  either: "by name or by position",
};

/** Params a receiver of `structure` takes: by name, by position, or both. */
const takes = (structure: ParamStructure): ("name" | "position")[] =>
  structure === "either" ? ["name", "position"] : structure === "by-name" ? ["name"] : ["position"];
/** How a sender of `structure` sends them (a generated client sends an "either" message by position). */
const sends = (structure: ParamStructure): ("name" | "position")[] => (structure === "by-name" ? ["name"] : ["position"]);

/** How the params of a message are carried, old → new: structure, optional, none; each difference that breaks a deployed peer. */
function paramsChanges(
  oldModel: ProtocolModel,
  newModel: ProtocolModel,
  kind: "methods" | "notifications",
  old: Message,
  next: Message,
): Change[] {
  const out: Change[] = [];
  const subject = old.name;
  const [sender, receiver] =
    old.direction === "both" ? ["peer", "peer"] : old.direction === "client_to_server" ? ["client", "server"] : ["server", "client"];
  const loc = (model: ProtocolModel, name: string, tail: string) => where(model, kind, name, tail);
  if ((old.params === undefined) !== (next.params === undefined)) {
    const added = old.params === undefined;
    out.push(
      change({
        subject,
        rule: added ? "PARAMS_ADDED" : "PARAMS_REMOVED",
        verdict: "breaking",
        change: added ? `params added (${next.params})` : `params removed (it took ${old.params})`,
        why: added
          ? next.paramsOptional
            ? `old ${sender}s send none, which new ${receiver}s accept; new ${sender}s may send params, which old ${receiver}s refuse`
            : `old ${sender}s send no params; new ${receiver}s require them`
          : `old ${sender}s send params; new ${receiver}s take none`,
        old: loc(oldModel, old.name, added ? "" : "/params"),
        new: loc(newModel, next.name, added ? "/params" : ""),
      }),
    );
    return out;
  }
  if (old.params === undefined) return out;
  if (old.paramsOptional !== next.paramsOptional) {
    const required = old.paramsOptional;
    out.push(
      change({
        subject,
        rule: required ? "PARAMS_MADE_REQUIRED" : "PARAMS_MADE_OPTIONAL",
        verdict: "breaking",
        change: required ? "params may be left out → required" : "params required → may be left out",
        why: required
          ? `old ${sender}s may leave the params out; new ${receiver}s require them`
          : `new ${sender}s may leave the params out; old ${receiver}s require them`,
        old: loc(oldModel, old.name, "/params_optional"),
        new: loc(newModel, next.name, "/params_optional"),
        frame: { jsonrpc: "2.0", ...(kind === "methods" ? { id: 1 } : {}), method: old.name },
      }),
    );
  }
  if (old.paramStructure !== next.paramStructure) {
    const problems: string[] = [];
    if (sends(old.paramStructure).some((f) => !takes(next.paramStructure).includes(f)))
      problems.push(
        `old ${sender}s send params ${STRUCTURE_WORDS[old.paramStructure].replace("by name or by position", "by position")}, which new ${receiver}s do not take`,
      );
    if (sends(next.paramStructure).some((f) => !takes(old.paramStructure).includes(f)))
      problems.push(
        `new ${sender}s send params ${STRUCTURE_WORDS[next.paramStructure].replace("by name or by position", "by position")}, which old ${receiver}s do not take`,
      );
    out.push(
      change({
        subject,
        rule: "PARAM_STRUCTURE_CHANGED",
        verdict: problems.length ? "breaking" : "compatible",
        change: `param_structure ${old.paramStructure} → ${next.paramStructure}`,
        why: problems.length ? problems.join("; ") : "what either side sends is taken by the other",
        old: loc(oldModel, old.name, "/param_structure"),
        new: loc(newModel, next.name, "/param_structure"),
      }),
    );
  }
  return out;
}

/** Who sends a message, old → new: a side that may send it now, or may no longer. */
function directionChange(
  oldModel: ProtocolModel,
  newModel: ProtocolModel,
  kind: "methods" | "notifications",
  old: Message,
  next: Message,
): Change {
  const gained = sendersOf(next.direction).filter((s) => !sendersOf(old.direction).includes(s));
  const lost = sendersOf(old.direction).filter((s) => !sendersOf(next.direction).includes(s));
  const reasons = [
    ...gained.map((s) => `new ${s}s may send "${old.name}"; old ${other(s)}s do not take it`),
    ...lost.map((s) => `old ${s}s still send "${old.name}"; new ${other(s)}s refuse it`),
  ];
  return change({
    subject: old.name,
    rule: "DIRECTION_CHANGED",
    verdict: "breaking",
    change: `direction ${old.direction} → ${next.direction}`,
    why: reasons.join("; "),
    old: where(oldModel, kind, old.name, "/direction"),
    new: where(newModel, kind, next.name, "/direction"),
  });
}

/** The protocol-level settings: batches, and what an object that does not state additionalProperties means. */
function protocolChanges(oldModel: ProtocolModel, newModel: ProtocolModel): Change[] {
  const out: Change[] = [];
  const at = { file: "protocol.json", pointer: "/batches" };
  if (oldModel.batches !== newModel.batches) {
    const removed = oldModel.batches;
    out.push(
      change({
        subject: "protocol",
        rule: removed ? "BATCHES_REMOVED" : "BATCHES_ADDED",
        verdict: "breaking",
        change: removed ? "batches allowed → not allowed" : "batches not allowed → allowed",
        why: removed
          ? "old peers may send a batch; new peers refuse it (-32600)"
          : "new peers may send a batch; old peers refuse it (-32600)",
        old: at,
        new: at,
        frame: [{ jsonrpc: "2.0", id: 1, method: (oldModel.methods[0] ?? newModel.methods[0])?.name ?? "x" }],
      }),
    );
  }
  if (oldModel.objects !== newModel.objects) {
    const closed = newModel.objects === "closed";
    out.push(
      change({
        subject: "protocol",
        rule: closed ? "OBJECTS_CLOSED" : "OBJECTS_OPENED",
        verdict: closed ? "breaking" : "compatible",
        change: `objects ${oldModel.objects} → ${newModel.objects}`,
        why: closed
          ? "new strict receivers refuse the fields their types do not declare, which old peers' open objects let through (extensions, fields of later versions)"
          : "receivers now keep fields their types do not declare",
        old: { file: "protocol.json", pointer: "/objects" },
        new: { file: "protocol.json", pointer: "/objects" },
      }),
    );
  }
  return out;
}

function messages(oldModel: ProtocolModel, newModel: ProtocolModel, kind: "methods" | "notifications"): Change[] {
  const out: Change[] = [];
  const olds: readonly Message[] = kind === "methods" ? oldModel.methods : oldModel.notifications;
  const news: readonly Message[] = kind === "methods" ? newModel.methods : newModel.notifications;
  const noun = kind === "methods" ? "method" : "notification";
  const newByName = new Map(news.map((m) => [m.name, m]));
  const oldNames = new Set(olds.map((m) => m.name));
  const renameTargets = new Set<string>();
  for (const old of olds) {
    const next = newByName.get(old.name);
    const subject = old.name;
    if (!next) {
      const sender = ROLE_OF_SENDER[old.direction];
      // A message added with the same params (and result) is most likely this one renamed.
      const sameParams = (m: Message) => {
        if (old.params === undefined || m.params === undefined) return old.params === m.params;
        const [a, b] = [fileOf(oldModel, old.params), fileOf(newModel, m.params)];
        return structurallyEqual(a, oldModel, b, newModel) || equivalent(oldModel, a, newModel, b);
      };
      const renamed = news.find((m) => !oldNames.has(m.name) && m.direction === old.direction && sameParams(m));
      if (renamed) renameTargets.add(renamed.name);
      const params = old.params === undefined ? undefined : (sample({ $ref: fileOf(oldModel, old.params) }, oldModel) as Json);
      out.push(
        change({
          subject,
          rule: renamed
            ? kind === "methods"
              ? "METHOD_RENAMED"
              : "NOTIFICATION_RENAMED"
            : kind === "methods"
              ? "METHOD_REMOVED"
              : "NOTIFICATION_REMOVED",
          verdict: "breaking",
          change: renamed ? `${noun} "${old.name}" renamed to "${renamed.name}"` : `${noun} "${old.name}" removed`,
          why:
            kind === "methods"
              ? `old ${sender}s still call "${old.name}"; a new ${otherRole(sender)} answers method_not_found`
              : `old ${otherRole(sender)}s wait for "${old.name}"; a new ${sender} never sends it`,
          old: where(oldModel, kind, old.name),
          new: renamed ? where(newModel, kind, renamed.name) : null,
          frame: {
            jsonrpc: "2.0",
            ...(kind === "methods" ? { id: 1 } : {}),
            method: old.name,
            ...(params === undefined ? {} : { params }),
          },
        }),
      );
      continue;
    }
    if (next.direction !== old.direction) {
      out.push(directionChange(oldModel, newModel, kind, old, next));
      continue;
    }
    // What the params are is judged message by message (the messages' own changes); how they are carried, here.
    out.push(...paramsChanges(oldModel, newModel, kind, old, next));
    if (kind === "methods") out.push(...errorList(oldModel, newModel, old as MethodModel, next as MethodModel));
  }
  for (const added of news.filter((m) => !oldNames.has(m.name) && !renameTargets.has(m.name))) {
    out.push(
      change({
        subject: added.name,
        rule: kind === "methods" ? "METHOD_ADDED" : "NOTIFICATION_ADDED",
        verdict: "compatible",
        change: `${noun} "${added.name}" added`,
        why: "old peers never send it and are not sent it unless they use it",
        old: null,
        new: where(newModel, kind, added.name),
      }),
    );
  }
  return out;
}

function errorList(oldModel: ProtocolModel, newModel: ProtocolModel, old: MethodModel, next: MethodModel): Change[] {
  const out: Change[] = [];
  const server = otherRole(ROLE_OF_SENDER[old.direction]);
  const client = ROLE_OF_SENDER[old.direction];
  const errorOf = (model: ProtocolModel, reason: string) => model.errors.find((e) => e.reason === reason);
  for (const reason of next.errors.filter((r) => !old.errors.includes(r))) {
    const error = errorOf(newModel, reason);
    out.push(
      change({
        subject: old.name,
        rule: "ERROR_ADDED_TO_METHOD",
        verdict: "breaking",
        change: `error "${reason}" added to the method's errors`,
        why: `a new ${server} may answer "${old.name}" with "${reason}"; old ${client}s do not expect it`,
        old: where(oldModel, "methods", old.name, "/errors"),
        new: where(newModel, "methods", next.name, `/errors/${next.errors.indexOf(reason)}`),
        ...(error ? { frame: { jsonrpc: "2.0", id: 1, error: { code: error.code, message: error.message, data: { reason } } } } : {}),
      }),
    );
  }
  for (const reason of old.errors.filter((r) => !next.errors.includes(r))) {
    out.push(
      change({
        subject: old.name,
        rule: "ERROR_REMOVED_FROM_METHOD",
        verdict: "breaking",
        change: `error "${reason}" removed from the method's errors`,
        why: `old ${server}s still answer "${old.name}" with "${reason}"; new ${client}s no longer expect it, and certified ${server}s that send it now fail`,
        old: where(oldModel, "methods", old.name, `/errors/${old.errors.indexOf(reason)}`),
        new: where(newModel, "methods", next.name, "/errors"),
      }),
    );
  }
  return out;
}

function errors(oldModel: ProtocolModel, newModel: ProtocolModel): Change[] {
  const out: Change[] = [];
  const at = (model: ProtocolModel, error: ErrorModel | undefined, tail: string) =>
    error ? { file: "errors.json", pointer: `/errors/${model.errors.indexOf(error)}${tail}` } : null;
  for (const old of oldModel.errors) {
    const byReason = newModel.errors.find((e) => e.reason === old.reason);
    const byCode = newModel.errors.find((e) => e.code === old.code);
    if (byReason && byReason.code !== old.code) {
      out.push(
        change({
          subject: "errors",
          rule: "ERROR_CODE_CHANGED",
          verdict: "breaking",
          change: `error "${old.reason}": code ${old.code} → ${byReason.code}`,
          why: "peers that match the error by its code no longer recognise it",
          old: at(oldModel, old, "/code"),
          new: at(newModel, byReason, "/code"),
        }),
      );
    } else if (!byReason && byCode) {
      out.push(
        change({
          subject: "errors",
          rule: "ERROR_REASON_CHANGED",
          verdict: "breaking",
          change: `error ${old.code}: reason "${old.reason}" → "${byCode.reason}"`,
          why: "peers that match the error by data.reason no longer recognise it",
          old: at(oldModel, old, "/reason"),
          new: at(newModel, byCode, "/reason"),
        }),
      );
    } else if (!byReason) {
      out.push(
        change({
          subject: "errors",
          rule: "ERROR_REMOVED",
          verdict: "breaking",
          change: `error "${old.reason}" (${old.code}) removed`,
          why: "old servers may still send it; new clients have no name for it",
          old: at(oldModel, old, ""),
          new: null,
        }),
      );
    }
  }
  for (const next of newModel.errors) {
    const old = oldModel.errors.find((e) => e.reason === next.reason);
    if (!old || (old.data === undefined) === (next.data === undefined)) continue;
    const added = old.data === undefined;
    out.push(
      change({
        subject: "errors",
        rule: added ? "ERROR_DATA_ADDED" : "ERROR_DATA_REMOVED",
        verdict: added ? "breaking" : "compatible",
        change: added
          ? `error "${next.reason}": data typed ${next.data}`
          : `error "${next.reason}": data no longer typed (it was ${old.data})`,
        why: added ? `old servers may send data that does not fit ${next.data}; new clients check it` : "clients no longer check the data",
        old: at(oldModel, old, "/data"),
        new: at(newModel, next, "/data"),
      }),
    );
  }
  return out;
}

const TIGHTER_WHEN_LONGER = new Set(["then", "after", "quiet", "notifications", "results"]);
const LOOSER_WHEN_LONGER = new Set(["until", "terminals"]);

function ordering(oldModel: ProtocolModel, newModel: ProtocolModel): Change[] {
  const out: Change[] = [];
  const at = (model: ProtocolModel, rule: OrderingRuleModel | undefined) =>
    rule ? { file: "protocol.json", pointer: `/ordering/rules/${model.ordering.indexOf(rule)}` } : null;
  for (const rule of newModel.ordering) {
    const old = oldModel.ordering.find((r) => r.id === rule.id);
    if (!old) {
      out.push(
        change({
          subject: "ordering",
          rule: "ORDERING_RULE_ADDED",
          verdict: "breaking",
          change: `ordering rule ${rule.id} added`,
          why: "implementations certified against the old rules may fail it",
          old: null,
          new: at(newModel, rule),
        }),
      );
      continue;
    }
    const tighter: string[] = [];
    const looser: string[] = [];
    const other: string[] = [];
    for (const key of new Set([...Object.keys(old.rule), ...Object.keys(rule.rule)])) {
      if (key === "description" || key === "requirement") continue;
      const a = old.rule[key];
      const b = rule.rule[key];
      if (JSON.stringify(a) === JSON.stringify(b)) continue;
      const aList = Array.isArray(a) ? a.map((v) => JSON.stringify(v)) : undefined;
      const bList = Array.isArray(b) ? b.map((v) => JSON.stringify(v)) : undefined;
      const grows = aList && bList && aList.every((v) => bList.includes(v));
      const shrinks = aList && bList && bList.every((v) => aList.includes(v));
      if ((TIGHTER_WHEN_LONGER.has(key) && grows) || (LOOSER_WHEN_LONGER.has(key) && shrinks)) tighter.push(key);
      else if ((TIGHTER_WHEN_LONGER.has(key) && shrinks) || (LOOSER_WHEN_LONGER.has(key) && grows)) looser.push(key);
      else other.push(key);
    }
    if (tighter.length) {
      out.push(
        change({
          subject: "ordering",
          rule: "ORDERING_RULE_TIGHTENED",
          verdict: "breaking",
          change: `ordering rule ${rule.id} tightened (${tighter.join(", ")})`,
          why: "implementations certified against the old rule may fail the new one",
          old: at(oldModel, old),
          new: at(newModel, rule),
        }),
      );
    } else if (other.length) {
      out.push(
        change({
          subject: "ordering",
          rule: "ORDERING_RULE_CHANGED",
          verdict: "undetermined",
          change: `ordering rule ${rule.id} changed (${other.join(", ")})`,
          why: "a change of what the rule relates (not only a longer or shorter list) is not judged",
          old: at(oldModel, old),
          new: at(newModel, rule),
        }),
      );
    } else if (looser.length) {
      out.push(
        change({
          subject: "ordering",
          rule: "ORDERING_RULE_LOOSENED",
          verdict: "compatible",
          change: `ordering rule ${rule.id} loosened (${looser.join(", ")})`,
          why: "whatever passed the old rule passes the new one",
          old: at(oldModel, old),
          new: at(newModel, rule),
        }),
      );
    }
  }
  for (const old of oldModel.ordering.filter((r) => !newModel.ordering.some((n) => n.id === r.id))) {
    out.push(
      change({
        subject: "ordering",
        rule: "ORDERING_RULE_REMOVED",
        verdict: "compatible",
        change: `ordering rule ${old.id} removed`,
        why: "nothing is checked that was not checked before",
        old: at(oldModel, old),
        new: null,
      }),
    );
  }
  return out;
}

export function registryChanges(oldModel: ProtocolModel, newModel: ProtocolModel): Change[] {
  return [
    ...protocolChanges(oldModel, newModel),
    ...messages(oldModel, newModel, "methods"),
    ...messages(oldModel, newModel, "notifications"),
    ...errors(oldModel, newModel),
    ...ordering(oldModel, newModel),
  ];
}
