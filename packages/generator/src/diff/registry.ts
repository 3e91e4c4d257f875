/**
 * Registry changes: the method and notification table of protocol.json, the error
 * registry and the ordering rules. A removed or redirected message, a changed error code
 * or reason, a method's error list changed either way, a params or result type replaced
 * by one that is not structurally equal, and an ordering rule added or tightened break
 * deployed or certified peers.
 */
import type { ErrorModel, Json, MethodModel, NotificationModel, OrderingRuleModel, ProtocolModel } from "../model.js";
import { structurallyEqual } from "./canonical.js";
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

function change(fields: Omit<Change, "category" | "subject"> & { subject?: string }): Change {
  return { category: "wire", subject: fields.subject ?? "registry", ...fields };
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
      const sameParams = (m: Message) => (old.params === undefined ? m.params === undefined : m.params !== undefined && structurallyEqual(fileOf(oldModel, old.params), oldModel, fileOf(newModel, m.params), newModel));
      const renamed = news.find((m) => !oldNames.has(m.name) && m.direction === old.direction && sameParams(m));
      if (renamed) renameTargets.add(renamed.name);
      const params = old.params === undefined ? undefined : (sample({ $ref: fileOf(oldModel, old.params) }, oldModel) as Json);
      out.push(
        change({
          subject,
          verdict: "breaking",
          change: renamed ? `${noun} "${old.name}" renamed to "${renamed.name}"` : `${noun} "${old.name}" removed`,
          why:
            kind === "methods"
              ? `old ${sender}s still call "${old.name}"; a new ${otherRole(sender)} answers method_not_found`
              : `old ${otherRole(sender)}s wait for "${old.name}"; a new ${sender} never sends it`,
          old: where(oldModel, kind, old.name),
          new: renamed ? where(newModel, kind, renamed.name) : null,
          frame: { jsonrpc: "2.0", ...(kind === "methods" ? { id: 1 } : {}), method: old.name, ...(params === undefined ? {} : { params }) },
        }),
      );
      continue;
    }
    if (next.direction !== old.direction) {
      out.push(
        change({
          subject,
          verdict: "breaking",
          change: `direction ${old.direction} → ${next.direction}`,
          why: `old peers send "${old.name}" the other way round; new peers neither send nor serve it as before`,
          old: where(oldModel, kind, old.name, "/direction"),
          new: where(newModel, kind, next.name, "/direction"),
        }),
      );
      continue;
    }
    for (const part of ["params", "result"] as const) {
      const a = old[part];
      const b = next[part];
      if (a === undefined || b === undefined) continue;
      const aFile = fileOf(oldModel, a);
      const bFile = fileOf(newModel, b);
      if (aFile !== bFile && !structurallyEqual(aFile, oldModel, bFile, newModel)) {
        out.push(
          change({
            subject,
            verdict: "breaking",
            change: `${part} type ${aFile} → ${bFile}`,
            why: `the ${part} now refers to another type that is not structurally equal; the message changes below say which peers break`,
            old: where(oldModel, kind, old.name, `/${part}/$ref`),
            new: where(newModel, kind, next.name, `/${part}/$ref`),
          }),
        );
      }
    }
    if (kind === "methods") out.push(...errorList(oldModel, newModel, old as MethodModel, next as MethodModel));
  }
  for (const added of news.filter((m) => !oldNames.has(m.name) && !renameTargets.has(m.name))) {
    out.push(change({ subject: added.name, verdict: "compatible", change: `${noun} "${added.name}" added`, why: "old peers never send it and are not sent it unless they use it", old: null, new: where(newModel, kind, added.name) }));
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
  const at = (model: ProtocolModel, error: ErrorModel | undefined, tail: string) => (error ? { file: "errors.json", pointer: `/errors/${model.errors.indexOf(error)}${tail}` } : null);
  for (const old of oldModel.errors) {
    const byReason = newModel.errors.find((e) => e.reason === old.reason);
    const byCode = newModel.errors.find((e) => e.code === old.code);
    if (byReason && byReason.code !== old.code) {
      out.push(change({ subject: "errors", verdict: "breaking", change: `error "${old.reason}": code ${old.code} → ${byReason.code}`, why: "peers that match the error by its code no longer recognise it", old: at(oldModel, old, "/code"), new: at(newModel, byReason, "/code") }));
    } else if (!byReason && byCode) {
      out.push(change({ subject: "errors", verdict: "breaking", change: `error ${old.code}: reason "${old.reason}" → "${byCode.reason}"`, why: "peers that match the error by data.reason no longer recognise it", old: at(oldModel, old, "/reason"), new: at(newModel, byCode, "/reason") }));
    } else if (!byReason) {
      out.push(change({ subject: "errors", verdict: "breaking", change: `error "${old.reason}" (${old.code}) removed`, why: "old servers may still send it; new clients have no name for it", old: at(oldModel, old, ""), new: null }));
    }
  }
  return out;
}

const TIGHTER_WHEN_LONGER = new Set(["then", "after", "quiet", "notifications", "results"]);
const LOOSER_WHEN_LONGER = new Set(["until", "terminals"]);

function ordering(oldModel: ProtocolModel, newModel: ProtocolModel): Change[] {
  const out: Change[] = [];
  const at = (model: ProtocolModel, rule: OrderingRuleModel | undefined) => (rule ? { file: "protocol.json", pointer: `/ordering/rules/${model.ordering.indexOf(rule)}` } : null);
  for (const rule of newModel.ordering) {
    const old = oldModel.ordering.find((r) => r.id === rule.id);
    if (!old) {
      out.push(change({ subject: "ordering", verdict: "breaking", change: `ordering rule ${rule.id} added`, why: "implementations certified against the old rules may fail it", old: null, new: at(newModel, rule) }));
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
      out.push(change({ subject: "ordering", verdict: "breaking", change: `ordering rule ${rule.id} tightened (${tighter.join(", ")})`, why: "implementations certified against the old rule may fail the new one", old: at(oldModel, old), new: at(newModel, rule) }));
    } else if (other.length) {
      out.push(change({ subject: "ordering", verdict: "undetermined", change: `ordering rule ${rule.id} changed (${other.join(", ")})`, why: "a change of what the rule relates (not only a longer or shorter list) is not judged", old: at(oldModel, old), new: at(newModel, rule) }));
    } else if (looser.length) {
      out.push(change({ subject: "ordering", verdict: "compatible", change: `ordering rule ${rule.id} loosened (${looser.join(", ")})`, why: "whatever passed the old rule passes the new one", old: at(oldModel, old), new: at(newModel, rule) }));
    }
  }
  for (const old of oldModel.ordering.filter((r) => !newModel.ordering.some((n) => n.id === r.id))) {
    out.push(change({ subject: "ordering", verdict: "compatible", change: `ordering rule ${old.id} removed`, why: "nothing is checked that was not checked before", old: at(oldModel, old), new: null }));
  }
  return out;
}

export function registryChanges(oldModel: ProtocolModel, newModel: ProtocolModel): Change[] {
  return [...messages(oldModel, newModel, "methods"), ...messages(oldModel, newModel, "notifications"), ...errors(oldModel, newModel), ...ordering(oldModel, newModel)];
}
