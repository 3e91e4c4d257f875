/**
 * `npm run docs`: builds the parts of the documentation that are derived, so that they cannot drift.
 *
 * - Every fenced block preceded by `<!-- examples/PATH -->` in README.md and docs/**.md gets the file's
 *   contents: the examples are files (run by tests), and the guides show them as they are.
 * - Every fenced block preceded by `<!-- run: COMMAND -->` gets `$ COMMAND` and what it prints (stdout, then
 *   stderr), run through `sh` in the repository root: outputs shown in the guides are real outputs.
 * - `docs/cli/` gets one reference page per command yargs lists in `turnspec --help`, holding that
 *   command's `--help` verbatim (a command added to bin/cli.ts gets its page by itself), and an index.
 *
 * `npm run docs -- --check` writes nothing, lists the stale files and exits 1 if there are any
 * (test/docs/docs.test.ts runs the same check).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, extname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI_DIR = "docs/cli";
const FIX = "npm run docs";

/** A file the build would write differently (or delete, when `content` is undefined). */
export interface DocChange {
  readonly path: string;
  readonly content: string | undefined;
  readonly why: string;
}

/** Markdown files with hand-written prose, in which blocks are embedded: README.md and docs/ outside docs/cli/. */
export function proseFiles(root = ROOT): string[] {
  const docs = existsSync(join(root, "docs"))
    ? readdirSync(join(root, "docs"), { recursive: true, encoding: "utf8" })
        .filter((f) => f.endsWith(".md"))
        .map((f) => `docs/${f.split("\\").join("/")}`)
        .filter((f) => !f.startsWith(`${CLI_DIR}/`))
    : [];
  return ["README.md", ...docs.sort()];
}

/** Every markdown file of the documentation, generated pages included. */
export function markdownFiles(root = ROOT): string[] {
  const cli = existsSync(join(root, CLI_DIR))
    ? readdirSync(join(root, CLI_DIR))
        .filter((f) => f.endsWith(".md"))
        .map((f) => `${CLI_DIR}/${f}`)
    : [];
  return [...proseFiles(root), ...cli.sort()];
}

const FENCE_LANG: Record<string, string> = {
  ".ts": "ts",
  ".js": "js",
  ".sh": "sh",
  ".json": "json",
  ".jsonl": "jsonl",
  ".yml": "yaml",
  ".yaml": "yaml",
  ".md": "md",
};

/** Thrown for a marker the build cannot fill: names the file and line. */
export class DocsError extends Error {
  override name = "DocsError";
}

/**
 * The text of `file` with each marked block refilled. A marker is an HTML comment on its own line
 * directly followed by a fenced block (which may be empty); the block's fence is chosen long enough
 * for what it holds.
 */
export function embed(file: string, text: string, root = ROOT): string {
  const lines = text.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    out.push(line);
    const marker = /^<!-- (examples\/\S+|run: (.+)) -->$/.exec(line);
    if (!marker) continue;
    const open = /^(`{3,})\S*$/.exec(lines[i + 1] ?? "");
    if (!open) throw new DocsError(`${file}:${i + 1}: the marker ${line} must be followed directly by a fenced code block`);
    let close = i + 2;
    while (close < lines.length && lines[close] !== open[1]) close++;
    if (close >= lines.length) throw new DocsError(`${file}:${i + 2}: the code block after ${line} is never closed`);
    let body: string;
    let lang: string;
    if (marker[2] === undefined) {
      const path = marker[1]!;
      if (!existsSync(join(root, path))) throw new DocsError(`${file}:${i + 1}: embeds ${path}, which does not exist`);
      body = readFileSync(join(root, path), "utf8");
      lang = FENCE_LANG[extname(path)] ?? "text";
    } else {
      body = `$ ${marker[2]}\n${runForDocs(marker[2], root)}`;
      lang = "console";
    }
    if (!body.endsWith("\n")) body += "\n";
    const longest = Math.max(2, ...[...body.matchAll(/^`{3,}/gm)].map((m) => m[0].length));
    const fence = "`".repeat(Math.max(3, longest + 1));
    out.push(`${fence}${lang}`, ...body.slice(0, -1).split("\n"), fence);
    i = close;
  }
  return out.join("\n");
}

/**
 * What a command prints, for a `<!-- run: … -->` block: stdout then stderr, whatever its exit status,
 * with the repository's absolute path taken out so that the output reads the same on every machine.
 */
function runForDocs(command: string, root: string): string {
  const run = spawnSync("sh", ["-c", command], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
    timeout: 120_000,
  });
  if (run.error) throw new DocsError(`cannot run ${command}: ${run.error.message}`);
  return `${run.stdout}${run.stderr}`.split(`${root}/`).join("").split(root).join(".");
}

/** A command as `turnspec --help` lists it. */
export interface CliCommand {
  readonly name: string;
  readonly usage: string;
  readonly describe: string;
}

/** The commands `turnspec --help` lists, with their usage line and description. */
export function cliCommands(root = ROOT): CliCommand[] {
  return parseCommands(turnspec(["--help"], root));
}

/** The commands of a yargs help text's Commands: section (descriptions unwrapped, `[aliases: …]` and `[default]` dropped). */
export function parseCommands(help: string): CliCommand[] {
  const section = help.split(/\n(?=\S)/).find((s) => s.startsWith("Commands:"));
  if (!section) throw new DocsError("turnspec --help lists no Commands: section");
  const commands: { name: string; usage: string; describe: string }[] = [];
  for (const line of section.split("\n").slice(1)) {
    const start = /^ {2}turnspec (\S+(?: [[<][^\]>]+[\]>])*)(?: {2,}(.*))?$/.exec(line);
    if (start) commands.push({ name: start[1]!.split(" ")[0]!, usage: `turnspec ${start[1]}`, describe: (start[2] ?? "").trim() });
    else if (line.trim() !== "" && commands.length > 0) commands.at(-1)!.describe = `${commands.at(-1)!.describe} ${line.trim()}`.trim();
  }
  return commands.map((c) => ({ ...c, describe: c.describe.replace(/(?:\s*\[(?:aliases: [^\]]*|default)\])+$/, "") }));
}

function turnspec(args: string[], root: string): string {
  // Not a terminal: yargs wraps at 80 columns, the same on every machine.
  return execFileSync(process.execPath, [join(root, "bin/turnspec.js"), ...args], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
}

/** The first `# ` heading of a markdown file, for naming it in a link. */
function title(text: string, fallback: string): string {
  return /^# (.+)$/m.exec(text)?.[1]?.trim() ?? fallback;
}

/** The generated CLI reference pages, by path. */
export function cliPages(root = ROOT): Map<string, string> {
  const commands = cliCommands(root);
  const guides = proseFiles(root)
    .filter((f) => f.startsWith("docs/"))
    .map((f) => ({ path: f, text: readFileSync(join(root, f), "utf8") }));
  const pages = new Map<string, string>();
  const header = (source: string) => `<!-- Generated by \`${FIX}\` from ${source}; do not edit. -->\n`;
  for (const command of commands) {
    const page = `${CLI_DIR}/${command.name}.md`;
    // A guide that links to this page is a guide about the command: linked back from it.
    const back = guides.filter((g) =>
      linkTargets(g.text).some((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && join(dirname(g.path), t) === page),
    );
    const seeAlso =
      back.length === 0 ? "" : `Guides: ${back.map((g) => `[${title(g.text, g.path)}](${relative(CLI_DIR, g.path)})`).join(", ")}.\n\n`;
    pages.set(
      page,
      `${header(`\`turnspec ${command.name} --help\``)}# \`${command.usage}\`\n\n${command.describe}\n\n${seeAlso}\`\`\`text\n${turnspec([command.name, "--help"], root).trimEnd()}\n\`\`\`\n`,
    );
  }
  const rows = commands.map((c) => `| [\`turnspec ${c.name}\`](${c.name}.md) | ${c.describe} |`);
  pages.set(
    `${CLI_DIR}/README.md`,
    `${header("`turnspec --help`")}# Command reference\n\nOne page per command, each its \`--help\` as the command prints it. Every command takes \`--help\`; \`npx turnspec --help\` lists them.\n\n| command | what it does |\n| --- | --- |\n${rows.join("\n")}\n\n\`\`\`text\n${turnspec(["--help"], root).trimEnd()}\n\`\`\`\n`,
  );
  return pages;
}

/** The link targets of a markdown text outside code blocks, as written (without anchors). */
export function linkTargets(text: string): string[] {
  return links(text)
    .map((l) => l.target.split("#")[0]!)
    .filter((t) => t !== "");
}

/** Every inline link and image outside fenced code blocks and code spans, with its line. */
export function links(text: string): { target: string; line: number }[] {
  const found: { target: string; line: number }[] = [];
  let fence: string | undefined;
  text.split("\n").forEach((line, i) => {
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (f) {
      if (fence === undefined) fence = f[1];
      else if (f[1]!.startsWith(fence)) fence = undefined;
      return;
    }
    if (fence !== undefined) return;
    for (const m of line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) found.push({ target: m[1]!, line: i + 1 });
  });
  return found;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors a markdown text has (repeated headings get -1, -2 as on GitHub). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let fence = false;
  for (const line of text.split("\n")) {
    if (/^\s*```/.test(line)) fence = !fence;
    if (fence) continue;
    const h = /^#{1,6} (.+)$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

/** A relative link that leads nowhere: to a missing file, or to a missing heading of a markdown file. */
export interface BrokenLink {
  readonly file: string;
  readonly line: number;
  readonly target: string;
  /** The repository path the link resolves to. */
  readonly resolved: string;
  readonly problem: string;
}

/** Checks every relative link of the documentation (README.md, docs/**.md, and the markdown they link to in the repository). */
export function brokenLinks(root = ROOT, files = markdownFiles(root)): BrokenLink[] {
  const broken: BrokenLink[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), "utf8");
    for (const { target, line } of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      const [path, anchor] = target.split("#") as [string, string | undefined];
      const resolvedPath =
        path === ""
          ? file
          : relative(root, resolve(root, dirname(file), decodeURIComponent(path)))
              .split("\\")
              .join("/");
      if (resolvedPath.startsWith("..")) {
        broken.push({ file, line, target, resolved: resolvedPath, problem: "leads outside the repository" });
        continue;
      }
      if (!existsSync(join(root, resolvedPath))) {
        broken.push({ file, line, target, resolved: resolvedPath, problem: "no such file" });
        continue;
      }
      if (
        anchor !== undefined &&
        anchor !== "" &&
        resolvedPath.endsWith(".md") &&
        !anchors(readFileSync(join(root, resolvedPath), "utf8")).has(anchor)
      ) {
        broken.push({ file, line, target, resolved: resolvedPath, problem: `no heading #${anchor} in ${resolvedPath}` });
      }
    }
  }
  return broken;
}

/** What `npm run docs` would change: stale prose files, stale or missing CLI pages, pages of commands that are gone. */
export function docChanges(root = ROOT): DocChange[] {
  const changes: DocChange[] = [];
  for (const file of proseFiles(root)) {
    const current = readFileSync(join(root, file), "utf8");
    const wanted = embed(file, current, root);
    if (wanted !== current) changes.push({ path: file, content: wanted, why: "an embedded example or output differs from its source" });
  }
  const pages = cliPages(root);
  for (const [path, content] of pages) {
    const current = existsSync(join(root, path)) ? readFileSync(join(root, path), "utf8") : undefined;
    if (current === undefined) changes.push({ path, content, why: "missing" });
    else if (current !== content) changes.push({ path, content, why: "differs from the command's --help" });
  }
  if (existsSync(join(root, CLI_DIR))) {
    for (const f of readdirSync(join(root, CLI_DIR))) {
      const path = `${CLI_DIR}/${f}`;
      if (!pages.has(path)) changes.push({ path, content: undefined, why: "no such command any more" });
    }
  }
  return changes;
}

function main(): void {
  const check = process.argv.includes("--check");
  let changes: DocChange[];
  try {
    changes = docChanges();
  } catch (error) {
    if (!(error instanceof DocsError)) throw error;
    console.error(`docs: ${error.message}`);
    process.exit(2);
  }
  if (check) {
    for (const c of changes) console.log(`stale: ${c.path} (${c.why})`);
    if (changes.length > 0) console.log(`${changes.length} stale file(s); run \`${FIX}\` to rebuild them.`);
    else console.log("docs: up to date");
    process.exitCode = changes.length > 0 ? 1 : 0;
    return;
  }
  for (const c of changes) {
    const abs = join(ROOT, c.path);
    if (c.content === undefined) rmSync(abs);
    else {
      mkdirSync(dirname(abs), { recursive: true });
      writeFileSync(abs, c.content);
    }
    console.log(`${c.content === undefined ? "removed" : "wrote"} ${c.path}`);
  }
  if (changes.length === 0) console.log("docs: up to date");
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
