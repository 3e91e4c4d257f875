/** The diff report as console text and as a Markdown pull-request comment, grouped by message. */
import type { Change, DiffReport, Location } from "./report.js";

const place = (loc: Location | null) => (loc ? `${loc.file}#${loc.pointer}` : "(none)");
const MARK = { breaking: "BREAKING", undetermined: "UNDETERMINED", compatible: "compatible" } as const;
const ORDER = { breaking: 0, undetermined: 1, compatible: 2 } as const;

function groups(report: DiffReport): [string, Change[]][] {
  const map = new Map<string, Change[]>();
  for (const change of report.changes) {
    const key = `${change.category === "code" ? "code: " : ""}${change.subject}`;
    map.set(key, [...(map.get(key) ?? []), change]);
  }
  const worst = (changes: Change[]) => Math.min(...changes.map((c) => ORDER[c.verdict]));
  return [...map.entries()].sort((a, b) => worst(a[1]) - worst(b[1]) || (a[0] < b[0] ? -1 : 1)).map(([k, v]) => [k, v.sort((a, b) => ORDER[a.verdict] - ORDER[b.verdict])]);
}

function headline(report: DiffReport): string {
  const { breaking, undetermined, compatible } = report.summary;
  return `${report.old.title} ${report.old.version} → ${report.new.version} (${report.categories.join(" + ")}, receivers ${report.mode}): ${breaking} breaking, ${undetermined} undetermined, ${compatible} compatible`;
}

const truncate = (text: string, max = 400) => (text.length > max ? `${text.slice(0, max)}…` : text);

export function renderText(report: DiffReport): string {
  const lines = [headline(report)];
  if (report.changes.length === 0) lines.push("No changes.");
  for (const [subject, changes] of groups(report)) {
    lines.push("", subject);
    for (const c of changes) {
      lines.push(`  ${MARK[c.verdict]}  ${c.change}`);
      lines.push(`    old ${place(c.old)}`, `    new ${place(c.new)}`);
      lines.push(`    ${c.why}`);
      if (c.counterexample) lines.push(`    counterexample: ${truncate(JSON.stringify(c.counterexample.value))}`, `    rejected: ${c.counterexample.rejection}`);
      if (c.frame) lines.push(`    frame: ${truncate(JSON.stringify(c.frame))}`);
    }
  }
  return lines.join("\n") + "\n";
}

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

export function renderMarkdown(report: DiffReport): string {
  const lines = [`### turnspec diff`, "", `**${headline(report)}**`];
  if (report.changes.length === 0) lines.push("", "No changes.");
  for (const [subject, changes] of groups(report)) {
    lines.push("", `#### \`${subject}\``, "", "| verdict | change | old | new | who breaks and why |", "| --- | --- | --- | --- | --- |");
    for (const c of changes) lines.push(`| ${MARK[c.verdict]} | ${cell(c.change)} | \`${cell(place(c.old))}\` | \`${cell(place(c.new))}\` | ${cell(c.why)} |`);
    const shown = changes.filter((c) => c.counterexample || c.frame);
    if (shown.length) {
      lines.push("", "<details><summary>counterexamples</summary>", "");
      for (const c of shown) {
        lines.push(`- ${cell(c.change)}:`, "", "  ```json", `  ${JSON.stringify(c.counterexample?.value ?? c.frame)}`, "  ```");
        if (c.counterexample) lines.push(`  rejected: \`${cell(c.counterexample.rejection)}\``);
      }
      lines.push("", "</details>");
    }
  }
  return lines.join("\n") + "\n";
}
