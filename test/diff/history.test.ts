/**
 * The diff over this repository's own past: the schemas folder at two commits, read from
 * git (with the old direction names client_to_gateway / gateway_to_client read as
 * client_to_server / server_to_client). Skipped where the history is not there (a
 * shallow clone or an installed package).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { loadAtRef } from "../../packages/generator/src/diff/folder.js";
import { diffSchemas, type DiffReport } from "../../packages/generator/src/diff/index.js";

const schemasDir = fileURLToPath(new URL("../../schemas", import.meta.url));
/** The first generated schemas (the generator's first commit), and the last with the old direction names. */
const FIRST = "80b466c";
const BEFORE_RENAME = "5890384";
/** The commit that renamed the directions (and nothing else on the wire). */
const RENAME = "5392d52";

const hasCommit = (ref: string) => {
  try {
    execFileSync("git", ["cat-file", "-e", `${ref}^{commit}`], { cwd: schemasDir, stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};
const history = [FIRST, BEFORE_RENAME, RENAME].every(hasCommit);

/** Each distinct change text with how often it occurs (once per type it changes; a type shared by messages is one change listing them). */
function tally(report: DiffReport): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of report.changes) {
    const key = `${c.verdict} ${c.flow ?? "registry"}: ${c.change}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

describe.skipIf(!history)("turnspec diff over this repository's history", () => {
  const first = history ? loadAtRef(schemasDir, FIRST) : undefined!;
  const beforeRename = history ? loadAtRef(schemasDir, BEFORE_RENAME) : undefined!;

  it("reads old direction names as the current ones", () => {
    expect(first.methods.find((m) => m.name === "turn/start")?.direction).toBe("client_to_server");
    expect(first.notifications.find((n) => n.name === "item/started")?.direction).toBe("server_to_client");
  });

  it(`${FIRST} → ${BEFORE_RENAME} for strict receivers: new turn-item fields break old clients; new errors and ordering rules break the registry`, () => {
    const report = diffSchemas(first, beforeRename, { mode: "strict" });
    expect(tally(report)).toEqual({
      // Commit 9186482 gave the tool items an optional `round` (all nine item kinds that a
      // model call produces) and an optional `tool_result` (the six tool kinds). Every item
      // type is a closed object, so a new server that sends either field is rejected by an
      // old client's strict validator. Old servers never send them, so new clients are
      // fine: nothing is reported old_to_new. Each is one change per item type (9 and 6),
      // each listing the five messages that carry the items (item/started, item/updated,
      // item/completed and the two work-view results).
      'breaking new_to_old: field "round" added, optional': 9,
      'breaking new_to_old: field "tool_result" added, optional': 6,
      // Commit 1545ee5: turn/resume may answer recovery_job_not_found, which old clients do not expect.
      'breaking registry: error "recovery_job_not_found" added to the method\'s errors': 1,
      // Commit 6e7a808: agent/route/create may answer thread_not_found.
      'breaking registry: error "thread_not_found" added to the method\'s errors': 1,
      // Commit f234354 declared the ordering rules; a gateway certified before may fail them.
      "breaking registry: ordering rule TURN-ORDER-STARTED-FIRST added": 1,
      "breaking registry: ordering rule ITEM-ORDER-STARTED-FIRST added": 1,
      "breaking registry: ordering rule TURN-ORDER-ONE-TERMINAL added": 1,
      "breaking registry: ordering rule TURN-ORDER-BLOCKED-QUIET added": 1,
      "breaking registry: ordering rule PERM-ORDER-RESOLVED-ONCE added": 1,
      "breaking registry: ordering rule TURN-ORDER-SEQUENCE added": 1,
      // Not reported: the new gateway_config.json type (no message carries it), the new
      // error in errors.json (only its use in a method's list counts), a reworded
      // description of allowed_tools and the x-appends-to-item-field extension keyword.
    });
    for (const c of report.changes.filter((c) => c.flow !== undefined)) {
      expect([...c.messages!].sort()).toEqual([
        "item/completed params",
        "item/started params",
        "item/updated params",
        "turn/work/items/get result",
        "turn/work/page result",
      ]);
      expect(c.why).toMatch(/^old clients reject what new servers send: /);
    }
    const round = report.changes.find(
      (c) => c.change === 'field "round" added, optional' && c.new?.file === "turn_item_agent_message.json",
    )!;
    expect(round.subject).toBe("TurnItemAgentMessage");
    expect(round.messages).toContain(round.counterexample!.message);
    expect(round.old).toEqual({ file: "turn_item_agent_message.json", pointer: "/additionalProperties" });
    expect(round.new).toEqual({ file: "turn_item_agent_message.json", pointer: "/properties/round" });
    // The counterexample is a whole value of the first message it names, carrying the item with its new field.
    expect(JSON.stringify(round.counterexample!.value)).toMatch(/\{"type":"agentMessage",[^}]*"round":1/);
    expect(round.counterexample!.rejection).toMatch(
      /additionalProperties must NOT have additional properties \{"additionalProperty":"round"\}/,
    );
    // The report --json would print is the one its schema describes.
    const schema = JSON.parse(readFileSync(new URL("../../packages/generator/src/diff/report.schema.json", import.meta.url), "utf8"));
    const validate = new Ajv2020({ strict: true }).compile(schema);
    expect(validate(JSON.parse(JSON.stringify(report))), JSON.stringify(validate.errors)).toBe(true);
  });

  it(`${FIRST} → ${BEFORE_RENAME} for tolerant receivers: the new fields are accepted; the registry changes remain`, () => {
    const report = diffSchemas(first, beforeRename, { mode: "tolerant" });
    // A tolerant old client ignores unknown fields, so the five messages only changed compatibly.
    expect(
      report.changes
        .filter((c) => c.verdict === "compatible")
        .map((c) => c.subject)
        .sort(),
    ).toEqual([
      "item/completed params",
      "item/started params",
      "item/updated params",
      "turn/work/items/get result",
      "turn/work/page result",
    ]);
    expect(report.summary).toEqual({ breaking: 8, undetermined: 0, compatible: 5, accepted: 0 });
  });

  it(`${BEFORE_RENAME} → ${RENAME}: the direction rename changes nothing on the wire`, () => {
    const report = diffSchemas(beforeRename, loadAtRef(schemasDir, RENAME), { categories: ["wire", "code"] });
    expect(report.changes).toEqual([]);
  });
});
