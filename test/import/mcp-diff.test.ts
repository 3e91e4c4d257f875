/**
 * `turnspec diff` between the imports of consecutive MCP versions, set against the items of
 * MCP's own changelogs (test/fixtures/published/mcp/changelog-items.json: each item, the
 * messages and types it touches, and the verdict a schema diff should give, for whom), and
 * the schema differences no item names (its `unlisted`).
 *
 * - precision: of the changes the diff calls breaking, the share an item (or an unlisted
 *   difference) says breaks the same side: old receivers (new senders' messages refused) or
 *   new receivers (old senders' messages refused);
 * - recall: of the (item, side) pairs the table says break, the share the diff reports.
 *
 * Both are printed. Every miss (a breaking change no item explains, an item side the diff
 * does not report) must be explained in MISSES below, so that a new miss fails the test
 * until someone looks at it; an explanation that no longer matches a miss fails it too.
 */
import { readFileSync, rmSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { diffSchemas, type Change } from "../../packages/generator/src/diff/index.js";
import { fileOf } from "../../packages/generator/src/import/folder.js";
import { importSource } from "../../packages/generator/src/import/command.js";
import { ImportMap, readMap } from "../../packages/generator/src/import/map.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import type { JsonObject, ProtocolModel } from "../../packages/generator/src/model.js";
import { MCP_VERSIONS, repoRoot, sayMissing, SOURCES } from "./published.js";

type Side = "old" | "new";
interface Item {
  readonly from: string;
  readonly to: string;
  readonly item?: string;
  readonly change?: string;
  readonly verdict: string;
  readonly touches: readonly string[];
  readonly changelog?: { readonly section: string; readonly number: number };
  readonly effects?: readonly { readonly touches: readonly string[]; readonly verdict: string }[];
}
const table = JSON.parse(readFileSync(join(repoRoot, "test/fixtures/published/mcp/changelog-items.json"), "utf8")) as {
  items: Item[];
  unlisted: Item[];
};

/** Which receivers a verdict says break. */
const SIDES: Record<string, Side[]> = {
  "breaks old receivers": ["old"],
  "breaks new receivers": ["new"],
  "breaks both": ["old", "new"],
  compatible: [],
  "no wire change": [],
};

/** A breaking change of the diff: the receivers it breaks. */
function sideOf(c: Change): Side | undefined {
  if (c.flow) return c.flow === "old_to_new" ? "new" : "old";
  if (/^(BATCHES_ADDED|PARAMS_MADE_OPTIONAL|PARAMS_ADDED)$/.test(c.rule)) return "old";
  if (
    /^(BATCHES_REMOVED|PARAMS_MADE_REQUIRED|PARAMS_REMOVED|METHOD_REMOVED|NOTIFICATION_REMOVED|METHOD_RENAMED|NOTIFICATION_RENAMED|ERROR_REMOVED)$/.test(
      c.rule,
    )
  )
    return "new";
  if (c.rule === "DIRECTION_CHANGED") return /new \w+s may send/.test(c.why) ? "old" : "new";
  return undefined;
}

/** The sources' message wrappers by name, with their method: to read a touch such as CallToolRequest.params. */
function wrappers(root: JsonObject): Map<string, string> {
  const defs = (root.$defs ?? root.definitions) as Record<string, JsonObject>;
  const out = new Map<string, string>();
  for (const [name, def] of Object.entries(defs)) {
    const method = (def.properties as JsonObject | undefined)?.method as JsonObject | undefined;
    if (typeof method?.const === "string") out.set(name, method.const);
  }
  return out;
}

/** Whether a change is about what a touch of the table names. */
function touches(touch: string, c: Change, methodsOf: Map<string, string>): boolean {
  const [head, ...path] = touch.split(".");
  // A wildcard names every wrapper of that kind (*Request.params._meta).
  if (head!.startsWith("*"))
    return [...methodsOf.keys()].filter((w) => w.endsWith(head!.slice(1))).some((w) => touches([w, ...path].join("."), c, methodsOf));
  const files = [c.old?.file, c.new?.file].filter((f): f is string => f !== undefined);
  const text = `${c.change} ${c.why}`.replaceAll("[]", "");
  // A type a variant change names (variant CreateTaskResult added), an error by its reason.
  if (path.length === 0 && /^VARIANT_/.test(c.rule) && c.change.includes(`variant ${head} `)) return true;
  if (
    path.length === 0 &&
    /Error$/.test(head!) &&
    c.rule.startsWith("ERROR_") &&
    text.includes(
      `"${head!
        .replace(/Error$/, "")
        .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
        .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
        .toLowerCase()}"`,
    )
  )
    return true;
  if (/^JSONRPC(Message|BatchRequest|BatchResponse)$/.test(head!)) return /^BATCHES_/.test(c.rule);
  if (touch === "every *Result") return /Result$/.test(c.subject) && /resultType/.test(text);
  if (/^(Client|Server)(Request|Notification|Result)$/.test(head!)) return /^(METHOD|NOTIFICATION)_|^DIRECTION_/.test(c.rule);
  const method = methodsOf.get(head!);
  if (method !== undefined) {
    if (c.subject === method) return true;
    if (path[0] === "params" || path.length === 0) {
      if ((c.messages ?? []).includes(`${method} params`) && (path.length <= 1 || path.slice(1).some((p) => text.includes(p)))) return true;
      if (
        c.subject === `${head}Params` &&
        (path.length <= 1 || path.slice(1).some((p) => text.includes(`"${p}"`) || text.startsWith(`${p}`) || text.includes(`${p}:`)))
      )
        return true;
    }
    return false;
  }
  const mine = c.subject === head || files.includes(fileOf(head!));
  if (!mine) return false;
  return (
    path.length === 0 ||
    path.some(
      (p) =>
        text.includes(`"${p}"`) ||
        text.startsWith(`${p}:`) ||
        text.startsWith(`${p}.`) ||
        text.includes(` ${p}:`) ||
        text.includes(`.${p}`),
    )
  );
}

/**
 * The misses, explained: breaking changes no item names (`false alarm …`) and item sides
 * the diff does not report (`missed …`), each keyed as the test prints it.
 */
const MISSES: Record<string, string> = {
  "missed 2025-06-18→2025-11-25 unlisted (breaks old receivers): The error response (JSONRPCError, renamed JSONRPCErrorResponse) no longer requires id":
    "the error response is JSON-RPC's own envelope, which the import drops (@turnspec/rpc reads envelopes, and takes a response with an id, as JSON-RPC 2.0 has it); a diff of two schemas folders has no envelope to compare",
  'false alarm 2025-11-25→2026-07-28 ERROR_REMOVED errors: error "url_elicitation_required" (-32042) removed (breaks new receivers)':
    "2026-07-28 has no URLElicitationRequiredError: URL elicitation travels in an input_required result instead (Major changes 7), so an old server's -32042 reaches a new client as a code it does not know; the table names that item by its result and its requests, not by the error it removes",
  "missed 2025-11-25→2026-07-28 Minor changes 11 (breaks old receivers): notifications/elicitation/complete and the elicitationId of URL elicitation removed":
    "elicitation/create is gone from 2026-07-28 (the server asks through an input_required result), so there is no message whose URL params could lose elicitationId: the diff reports the method and notifications/elicitation/complete removed (breaking new receivers), and the old receivers' side of the item has no message to be judged on",
};

const present = MCP_VERSIONS.every((v) => SOURCES.find((s) => s.name === `MCP ${v}`)!.present);

describe.skipIf(!present)("turnspec diff between consecutive MCP versions, against MCP's changelogs", () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const load = (version: string): { model: ProtocolModel; root: JsonObject } => {
    const s = SOURCES.find((x) => x.name === `MCP ${version}`)!;
    const root = JSON.parse(readFileSync(s.file, "utf8")) as JsonObject;
    const { files } = importSource(root, "jsonschema", new ImportMap(readMap(s.map)), "schema.json");
    const dir = mkdtempSync(join(tmpdir(), "turnspec-mcp-diff-"));
    dirs.push(dir);
    for (const [name, text] of files) writeFileSync(join(dir, name), text);
    return { model: loadSchemas(dir), root };
  };

  it("reports what the changelogs say, precision and recall printed, every miss explained", () => {
    const models = new Map(MCP_VERSIONS.map((v) => [v, load(v)]));
    let breakingChanges = 0;
    let explainedChanges = 0;
    let expectedPairs = 0;
    let foundPairs = 0;
    const misses: string[] = [];
    const lines: string[] = [];
    for (let i = 0; i + 1 < MCP_VERSIONS.length; i++) {
      const [from, to] = [MCP_VERSIONS[i]!, MCP_VERSIONS[i + 1]!];
      const oldOne = models.get(from)!;
      const newOne = models.get(to)!;
      const methodsOf = new Map([...wrappers(oldOne.root), ...wrappers(newOne.root)]);
      const report = diffSchemas(oldOne.model, newOne.model, { mode: "strict" });
      const pairFrom = to === "draft" ? "2026-07-28" : from;
      const entries = [...table.items, ...table.unlisted].filter(
        (it) => it.from === pairFrom && it.to === (to === "draft" ? "draft" : to) && it.verdict !== "not a schema change",
      );
      const breaking = report.changes.filter((c) => c.verdict === "breaking" && sideOf(c));
      breakingChanges += breaking.length;
      for (const c of breaking) {
        const side = sideOf(c)!;
        const explainedBy = entries.filter(
          (it) =>
            SIDES[it.verdict]!.includes(side) &&
            [...it.touches, ...(it.effects ?? []).flatMap((e) => e.touches)].some((t) => touches(t, c, methodsOf)),
        );
        if (explainedBy.length) explainedChanges++;
        else misses.push(`false alarm ${from}→${to} ${c.rule} ${c.subject}: ${c.change} (breaks ${side} receivers)`);
      }
      for (const it of entries) {
        for (const side of SIDES[it.verdict]!) {
          expectedPairs++;
          const found = breaking.some(
            (c) =>
              sideOf(c) === side && [...it.touches, ...(it.effects ?? []).flatMap((e) => e.touches)].some((t) => touches(t, c, methodsOf)),
          );
          if (found) foundPairs++;
          else
            misses.push(
              `missed ${from}→${to} ${it.changelog ? `${it.changelog.section} ${it.changelog.number}` : "unlisted"} (breaks ${side} receivers): ${(it.item ?? it.change ?? "").slice(0, 90)}`,
            );
        }
      }
      lines.push(
        `${from} → ${to}: ${report.summary.breaking} breaking, ${report.summary.undetermined} undetermined, ${report.summary.compatible} compatible`,
      );
    }
    const precision = breakingChanges ? explainedChanges / breakingChanges : 1;
    const recall = expectedPairs ? foundPairs / expectedPairs : 1;
    console.log(
      [
        ...lines,
        `precision ${precision.toFixed(2)} (${explainedChanges} of ${breakingChanges} breaking changes named by an item), recall ${recall.toFixed(2)} (${foundPairs} of ${expectedPairs} item sides found)`,
        ...misses.map((m) => `  ${m}${MISSES[m] ? `\n      why: ${MISSES[m]}` : ""}`),
      ].join("\n"),
    );
    expect(
      misses.filter((m) => !MISSES[m]),
      "misses without an explanation",
    ).toEqual([]);
    expect(
      Object.keys(MISSES).filter((m) => !misses.includes(m)),
      "explanations of misses that no longer happen",
    ).toEqual([]);
  }, 300_000);
});

if (!present) for (const v of MCP_VERSIONS) sayMissing(SOURCES.find((s) => s.name === `MCP ${v}`)!);
