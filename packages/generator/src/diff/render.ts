/**
 * The diff report as console text and as a Markdown pull-request comment. Message changes
 * are grouped by the type where the schema changed; each change is said once, old → new,
 * with under it who breaks (the only line that names a direction) and the messages it
 * reaches. Registry and code changes are grouped by their subject.
 */
import type { Change, DiffReport, Location } from "./report.js";

const place = (loc: Location | null) => (loc ? `${loc.file}#${loc.pointer}` : "(none)");
const MARK = { breaking: "BREAKING", undetermined: "UNDETERMINED", compatible: "compatible" } as const;
const ORDER = { breaking: 0, undetermined: 1, compatible: 2 } as const;

/** The changes under one heading, each distinct change text once with its entries (one per deployment it breaks). */
interface Group {
  readonly heading: string;
  readonly changes: { readonly text: string; readonly verdict: Change["verdict"]; readonly entries: Change[] }[];
}

const worst = (changes: readonly Change[]) => Math.min(...changes.map((c) => ORDER[c.verdict]));

function groups(report: DiffReport): Group[] {
  const map = new Map<string, Change[]>();
  for (const change of report.changes) {
    const key = `${change.category === "code" ? "code: " : ""}${change.subject}`;
    map.set(key, [...(map.get(key) ?? []), change]);
  }
  return [...map.entries()]
    .sort((a, b) => worst(a[1]) - worst(b[1]) || (a[0] < b[0] ? -1 : 1))
    .map(([heading, all]) => {
      const byText = new Map<string, Change[]>();
      for (const c of all) byText.set(c.change, [...(byText.get(c.change) ?? []), c]);
      const changes = [...byText].map(([text, entries]) => ({
        text,
        verdict: entries.slice().sort((a, b) => ORDER[a.verdict] - ORDER[b.verdict])[0]!.verdict,
        entries: entries.slice().sort((a, b) => ORDER[a.verdict] - ORDER[b.verdict]),
      }));
      return { heading, changes: changes.sort((a, b) => ORDER[a.verdict] - ORDER[b.verdict]) };
    });
}

function headline(report: DiffReport): string {
  const { breaking, undetermined, compatible, accepted } = report.summary;
  return `${report.old.title} ${report.old.version} → ${report.new.version} (${report.categories.join(" + ")}, receivers ${report.mode}): ${breaking} breaking, ${undetermined} undetermined, ${compatible} compatible${accepted ? `, ${accepted} accepted` : ""}`;
}

/** The mark of a change: its verdict, or ACCEPTED for one the team accepted for this release. */
const mark = (verdict: Change["verdict"], entries: readonly Change[]) =>
  entries.every((c) => c.accepted) && verdict !== "compatible" ? "ACCEPTED" : MARK[verdict];

/** Acceptances that no longer apply, said at the end. */
function staleLines(report: DiffReport): string[] {
  return (report.staleAcceptances ?? []).map(
    (a) =>
      `note: the acceptance of ${a.rule}${a.subject ? ` for ${a.subject}` : ""} is for version ${a.version}, not ${report.new.version}: it no longer applies (remove it from turnspec.config.json)`,
  );
}

const truncate = (text: string, max = 400) => (text.length > max ? `${text.slice(0, max)}…` : text);

/** "turn/started params, turn/completed params (2 messages)"; nothing for a change that is not about messages. */
function messagesLine(c: Change): string | undefined {
  if (!c.messages?.length) return undefined;
  return `${c.messages.length === 1 ? "message" : `messages (${c.messages.length})`}: ${c.messages.join(", ")}`;
}

export function renderText(report: DiffReport): string {
  const lines = [headline(report)];
  if (report.changes.length === 0) lines.push("No changes.");
  for (const group of groups(report)) {
    lines.push("", group.heading);
    for (const { text, verdict, entries } of group.changes) {
      lines.push(`  ${mark(verdict, entries)}  ${text}  [${entries[0]!.rule}]`);
      // One entry per deployment the change breaks: who breaks first, then where and what shows it.
      for (const c of entries) {
        lines.push(`    ${c.verdict === "compatible" ? "" : "who breaks: "}${c.why}`);
        if (c.accepted) lines.push(`      accepted for ${c.accepted.version}: ${c.accepted.reason}`);
        lines.push(`      old ${place(c.old)}`, `      new ${place(c.new)}`);
        const messages = messagesLine(c);
        if (messages) lines.push(`      ${messages}`);
        if (c.counterexample) {
          const of = c.counterexample.message !== undefined && (c.messages?.length ?? 0) > 1 ? ` (${c.counterexample.message})` : "";
          lines.push(
            `      counterexample${of}: ${truncate(JSON.stringify(c.counterexample.value))}`,
            `      rejected: ${c.counterexample.rejection}`,
          );
        }
        if (c.frame) lines.push(`      frame: ${truncate(JSON.stringify(c.frame))}`);
      }
    }
  }
  const stale = staleLines(report);
  if (stale.length) lines.push("", ...stale);
  return lines.join("\n") + "\n";
}

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

export function renderMarkdown(report: DiffReport): string {
  const lines = [`### turnspec diff`, "", `**${headline(report)}**`];
  if (report.changes.length === 0) lines.push("", "No changes.");
  for (const group of groups(report)) {
    const entries = group.changes.flatMap((c) => c.entries);
    lines.push(
      "",
      `#### \`${group.heading}\``,
      "",
      "| verdict | rule | change | old | new | who breaks and why | messages |",
      "| --- | --- | --- | --- | --- | --- | --- |",
    );
    for (const { text, entries: same } of group.changes) {
      same.forEach((c, i) =>
        lines.push(
          `| ${c.accepted && c.verdict !== "compatible" ? "ACCEPTED" : MARK[c.verdict]} | \`${c.rule}\` | ${i === 0 ? cell(text) : ""} | \`${cell(place(c.old))}\` | \`${cell(place(c.new))}\` | ${cell(c.why)}${c.accepted ? ` (accepted for ${cell(c.accepted.version)}: ${cell(c.accepted.reason)})` : ""} | ${cell(c.messages?.join(", ") ?? "")} |`,
        ),
      );
    }
    const shown = entries.filter((c) => c.counterexample || c.frame);
    if (shown.length) {
      lines.push("", "<details><summary>counterexamples</summary>", "");
      for (const c of shown) {
        const of = c.counterexample?.message !== undefined && (c.messages?.length ?? 0) > 1 ? ` (${c.counterexample.message})` : "";
        lines.push(`- ${cell(c.change)}${of}:`, "", "  ```json", `  ${JSON.stringify(c.counterexample?.value ?? c.frame)}`, "  ```");
        if (c.counterexample) lines.push(`  rejected: \`${cell(c.counterexample.rejection)}\``);
      }
      lines.push("", "</details>");
    }
  }
  const stale = staleLines(report);
  if (stale.length) lines.push("", ...stale.map((l) => `> ${l}`));
  return lines.join("\n") + "\n";
}
