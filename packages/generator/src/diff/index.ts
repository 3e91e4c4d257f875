/**
 * `diffSchemas(old, new, options)`: which change from one loaded schemas folder to another
 * breaks which deployed peer, each breaking message change shown by a counterexample the
 * compiled validators of both sides confirm.
 *
 * Every message is judged for both deployments: old senders talking to new receivers (the
 * new receiver must accept what old senders send) and new senders talking to old
 * receivers (what new senders send must pass the old receiver's validator, in the
 * receivers' mode). The sender of each message comes from its direction in protocol.json.
 */
import type { ValidationMode } from "../emit/validators.js";
import type { Direction, ProtocolModel } from "../model.js";
import { structurallyEqual } from "./canonical.js";
import { codeChanges } from "./code.js";
import { compareRoots, equivalent, type Finding } from "./compare.js";
import { qualifiedModel } from "./qualify.js";
import { registryChanges } from "./registry.js";
import {
  ROLE_OF_SENDER,
  otherRole,
  type Acceptance,
  type Category,
  type Change,
  type DiffOptions,
  type DiffReport,
  type Flow,
} from "./report.js";
import { ModelValidators } from "./validators.js";

export type { Acceptance, Category, Change, Counterexample, DiffOptions, DiffReport, Flow, Location, Role, Verdict } from "./report.js";
export { RULES, type RuleId } from "./rules.js";
export { DIRECTION_ALIASES, loadAtRef, loadFolder, SchemasUnreadable } from "./folder.js";
export { renderMarkdown, renderText } from "./render.js";

/** One message of the protocol as it is carried in both versions. */
interface MessagePart {
  readonly subject: string;
  readonly senderDirection: Direction;
  readonly oldFile: string;
  readonly newFile: string;
}

function sharedMessages(oldModel: ProtocolModel, newModel: ProtocolModel): MessagePart[] {
  const fileOf = (model: ProtocolModel, title: string) => model.types.find((t) => t.title === title)!.file;
  const reverse = (d: Direction): Direction =>
    d === "client_to_server" ? "server_to_client" : d === "server_to_client" ? "client_to_server" : "both";
  const parts: MessagePart[] = [];
  // A removed method is a registry change, its messages not compared; a changed direction is
  // one too, and the messages of the side that sends them in both versions are compared.
  const shared = (a: Direction, b: Direction): Direction | undefined => (a === b ? a : a === "both" ? b : b === "both" ? a : undefined);
  for (const old of oldModel.methods) {
    const next = newModel.methods.find((m) => m.name === old.name);
    const direction = next && shared(old.direction, next.direction);
    if (!next || !direction) continue;
    if (old.params !== undefined && next.params !== undefined)
      parts.push({
        subject: `${old.name} params`,
        senderDirection: direction,
        oldFile: fileOf(oldModel, old.params),
        newFile: fileOf(newModel, next.params),
      });
    parts.push({
      subject: `${old.name} result`,
      senderDirection: reverse(direction),
      oldFile: fileOf(oldModel, old.result),
      newFile: fileOf(newModel, next.result),
    });
  }
  for (const old of oldModel.notifications) {
    const next = newModel.notifications.find((n) => n.name === old.name);
    const direction = next && shared(old.direction, next.direction);
    if (!next || !direction) continue;
    if (old.params !== undefined && next.params !== undefined)
      parts.push({
        subject: `${old.name} params`,
        senderDirection: direction,
        oldFile: fileOf(oldModel, old.params),
        newFile: fileOf(newModel, next.params),
      });
  }
  // An error's data, where both versions give it a type: the server sends it.
  for (const old of oldModel.errors) {
    const next = newModel.errors.find((e) => e.reason === old.reason);
    if (old.data !== undefined && next?.data !== undefined)
      parts.push({
        subject: `${old.reason} data`,
        senderDirection: "server_to_client",
        oldFile: fileOf(oldModel, old.data),
        newFile: fileOf(newModel, next.data),
      });
  }
  return parts;
}

/**
 * The field a change is in, from its place in the new schema (the old one if the new has
 * none), as a dotted path inside the type: `identity_id`, `permission_profile.mode`,
 * `items[]`. Schema keywords are left out, and so is a last field the change text already
 * names (`field "owner" added`), so that the deployments a change breaks read alike.
 */
function fieldPath(finding: Finding, flow: Flow): string {
  const loc = flow === "old_to_new" ? finding.receiver : finding.sender;
  const tokens = loc.pointer
    .split("/")
    .slice(1)
    .map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
  const path: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === "properties" && i + 1 < tokens.length) path.push(tokens[++i]!);
    else if (token === "items" && path.length) path[path.length - 1] += "[]";
    else if (token === "items") path.push("[]");
    else if ((token === "oneOf" || token === "anyOf") && i + 1 < tokens.length) i++;
  }
  const named = /^field "([^"]+)"/.exec(finding.change)?.[1];
  if (
    named !== undefined &&
    path.at(-1) === named &&
    loc.pointer.endsWith(`/properties/${named.replaceAll("~", "~0").replaceAll("/", "~1")}`)
  )
    path.pop();
  return path.join(".");
}

function judge(
  part: MessagePart,
  flow: Flow,
  finding: Finding,
  senders: ModelValidators,
  receivers: ModelValidators,
  mode: ValidationMode,
  subject: string,
): Change {
  const senderFile = flow === "old_to_new" ? part.oldFile : part.newFile;
  const receiverFile = flow === "old_to_new" ? part.newFile : part.oldFile;
  const senderRole = ROLE_OF_SENDER[part.senderDirection];
  const [senderVersion, receiverVersion] = flow === "old_to_new" ? (["old", "new"] as const) : (["new", "old"] as const);
  const base = {
    category: "wire" as const,
    rule: finding.rule,
    subject,
    change: fieldPath(finding, flow) ? `${fieldPath(finding, flow)}: ${finding.change}` : finding.change,
    messages: [part.subject],
    old: flow === "old_to_new" ? finding.sender : finding.receiver,
    new: flow === "old_to_new" ? finding.receiver : finding.sender,
    flow,
    sender: { version: senderVersion, role: senderRole },
    receiver: { version: receiverVersion, role: otherRole(senderRole) },
  };
  const who = `${receiverVersion} ${otherRole(senderRole)}s reject what ${senderVersion} ${senderRole}s send`;
  if (finding.hypothetical) {
    for (const value of finding.candidates) {
      if (!senders.check(senderFile, "strict", value).valid || receivers.check(receiverFile, mode, value).valid) continue;
      return {
        ...base,
        verdict: "undetermined",
        why: `${finding.why}; for example ${JSON.stringify(value).slice(0, 200)}, which deployed ${senderRole}s have no reason to send`,
      };
    }
    return { ...base, verdict: "undetermined", why: `${finding.why}; no generated value showed a break` };
  }
  for (const value of finding.candidates) {
    if (!senders.check(senderFile, "strict", value).valid) continue;
    const rejected = receivers.check(receiverFile, mode, value);
    if (rejected.valid) continue;
    return {
      ...base,
      verdict: "breaking",
      why: `${who}: ${finding.why}`,
      counterexample: { message: part.subject, value, rejection: rejected.error! },
    };
  }
  if (finding.verdict === "breaking") {
    return {
      ...base,
      verdict: "undetermined",
      why: `${finding.why}; but no generated value was confirmed by both validators, so the change is not judged`,
    };
  }
  return { ...base, verdict: "undetermined", why: `${finding.why}; no generated value showed a break` };
}

export function diffSchemas(oldLoaded: ProtocolModel, newLoaded: ProtocolModel, options: DiffOptions = {}): DiffReport {
  // References that name their files, so that any schema can be read wherever it is reached.
  const oldModel = qualifiedModel(oldLoaded);
  const newModel = qualifiedModel(newLoaded);
  const mode = options.mode ?? "strict";
  const categories = options.categories ?? ["wire"];
  const changes: Change[] = [];
  if (categories.includes("wire")) {
    const oldValidators = new ModelValidators(oldModel);
    const newValidators = new ModelValidators(newModel);
    /** A schema change reached by several messages (a shared type) is one change listing them all. */
    const byChange = new Map<string, Change>();
    const titleOf = (finding: Finding, flow: Flow) => {
      const [oldLoc, newLoc] = flow === "old_to_new" ? [finding.sender, finding.receiver] : [finding.receiver, finding.sender];
      const [model, file] = newLoc.file ? [newModel, newLoc.file] : [oldModel, oldLoc.file];
      return model.types.find((t) => t.file === file)?.title ?? file;
    };
    for (const part of sharedMessages(oldModel, newModel)) {
      const found: Change[] = [];
      const seen = new Set<string>();
      for (const flow of ["old_to_new", "new_to_old"] as const) {
        const [sender, receiver] = flow === "old_to_new" ? [oldModel, newModel] : [newModel, oldModel];
        const [senderFile, receiverFile] = flow === "old_to_new" ? [part.oldFile, part.newFile] : [part.newFile, part.oldFile];
        const [senders, receivers] = flow === "old_to_new" ? [oldValidators, newValidators] : [newValidators, oldValidators];
        const senderVersion = flow === "old_to_new" ? "old" : "new";
        for (const finding of compareRoots({ sender, receiver, senderVersion, tolerant: mode === "tolerant" }, senderFile, receiverFile)) {
          const key = `${flow}|${finding.sender.file}#${finding.sender.pointer}|${finding.receiver.file}#${finding.receiver.pointer}|${finding.change}`;
          if (seen.has(key)) continue;
          seen.add(key);
          const change = judge(part, flow, finding, senders, receivers, mode, titleOf(finding, flow));
          // Judged in another message already: the same change, one more message it reaches.
          const same = byChange.get(`${key}|${change.verdict}|${change.why}`);
          if (same) {
            // The shortest counterexample of the messages it reaches is the one shown: the easiest to read.
            const shorter =
              change.counterexample &&
              same.counterexample &&
              JSON.stringify(change.counterexample.value).length < JSON.stringify(same.counterexample.value).length;
            byChange.set(`${key}|${change.verdict}|${change.why}`, {
              ...same,
              messages: [...same.messages!, part.subject],
              ...(shorter ? { counterexample: change.counterexample } : {}),
            });
            found.push(same);
            continue;
          }
          byChange.set(`${key}|${change.verdict}|${change.why}`, change);
          found.push(change);
        }
      }
      if (
        found.length === 0 &&
        !structurallyEqual(part.oldFile, oldModel, part.newFile, newModel) &&
        !equivalent(oldModel, part.oldFile, newModel, part.newFile)
      ) {
        found.push({
          category: "wire",
          rule: "SCHEMA_CHANGED",
          subject: part.subject,
          messages: [part.subject],
          verdict: "compatible",
          change: part.oldFile === part.newFile ? `${part.oldFile} changed` : `${part.oldFile} → ${part.newFile}`,
          why: `the schemas differ, but every value either side sends is accepted by the other in ${mode} mode`,
          old: { file: part.oldFile, pointer: "" },
          new: { file: part.newFile, pointer: "" },
        });
      }
      changes.push(...found.filter((c) => c.verdict === "compatible"));
    }
    changes.push(...byChange.values());
    changes.push(...registryChanges(oldModel, newModel));
  }
  if (categories.includes("code")) changes.push(...codeChanges(oldModel, newModel));
  accept(changes, newModel.version, options.accepted ?? []);
  const count = (verdict: Change["verdict"]) => changes.filter((c) => c.verdict === verdict && !c.accepted).length;
  return {
    mode,
    categories: [...categories] as Category[],
    old: { title: oldModel.title, version: oldModel.version },
    new: { title: newModel.title, version: newModel.version },
    changes,
    summary: {
      breaking: count("breaking"),
      undetermined: count("undetermined"),
      compatible: count("compatible"),
      accepted: changes.filter((c) => c.accepted).length,
    },
    ...(stale(options.accepted ?? [], newModel.version).length
      ? { staleAcceptances: stale(options.accepted ?? [], newModel.version) }
      : {}),
  };
}

/** Whether an acceptance names this change: its rule, and its subject or message when it names one. */
const names = (a: Acceptance, c: Change): boolean =>
  a.rule === c.rule && (a.subject === undefined || a.subject === c.subject || (c.messages ?? []).includes(a.subject));

/**
 * Marks the changes a team accepted for the release they are in (turnspec.config.json's
 * diff.accept): an acceptance holds for the new side's protocol version it names, and only
 * for it, so that it lapses with the release.
 */
function accept(changes: Change[], version: string, acceptances: readonly Acceptance[]): void {
  const current = acceptances.filter((a) => a.version === version);
  changes.forEach((c, i) => {
    if (c.verdict === "compatible") return;
    const by = current.find((a) => names(a, c));
    if (by) changes[i] = { ...c, accepted: { version: by.version, reason: by.reason } };
  });
}

/** Acceptances for another version than the new side's: they lapsed (or are early), and are said so. */
function stale(acceptances: readonly Acceptance[], version: string): Acceptance[] {
  return acceptances.filter((a) => a.version !== version);
}
