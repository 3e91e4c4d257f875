/**
 * The documentation cannot drift: what `npm run docs` derives (examples and command outputs embedded in
 * the guides, the CLI reference pages from `--help`) matches the committed files, and every relative link
 * of README.md and docs/ leads to a file (and heading) that exists.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { anchors, brokenLinks, cliCommands, docChanges, DocsError, embed, markdownFiles, parseCommands } from "../../scripts/docs.js";

/**
 * Guides other parts of the project are writing; linked already, missing until they land.
 * Empty this list as they arrive: an entry whose file exists fails the test.
 */
const PENDING_TARGETS: string[] = [];

describe("the documentation", () => {
  it("is what `npm run docs` builds: embedded examples and outputs, and the CLI reference", () => {
    const stale = docChanges().map((c) => `${c.path} (${c.why})`);
    expect(stale, `stale documentation: run \`npm run docs\` to rebuild ${stale.join(", ")}`).toEqual([]);
  });

  it("has a reference page for every command `turnspec --help` lists", () => {
    const names = cliCommands().map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(["generate", "validate", "serve", "certify"]));
    for (const name of names) expect(markdownFiles()).toContain(`docs/cli/${name}.md`);
  });

  it("links only to files and headings that exist, apart from the guides still being written", () => {
    const broken = brokenLinks(undefined, [...markdownFiles(), "schemas/README.md"]);
    const unexpected = broken.filter((b) => !(b.problem === "no such file" && PENDING_TARGETS.includes(b.resolved)));
    expect(unexpected.map((b) => `${b.file}:${b.line} ${b.target}: ${b.problem}`)).toEqual([]);
    const arrived = PENDING_TARGETS.filter((t) => !broken.some((b) => b.resolved === t));
    expect(arrived, `these guides exist or are no longer linked: remove them from PENDING_TARGETS in test/docs/docs.test.ts`).toEqual([]);
  });
});

describe("the docs build", () => {
  const root = mkdtempSync(join(tmpdir(), "turnspec-docs-"));
  const write = (path: string, text: string) => {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  };

  it("fills a marked block with the file, choosing a fence longer than any in it", () => {
    write("examples/a.md", "```sh\necho hi\n```\n");
    write("examples/b.ts", "const x = 1;\n");
    const doc = "# Guide\n\n<!-- examples/b.ts -->\n```ts\nold\n```\n\n<!-- examples/a.md -->\n```\n```\ntext after\n";
    expect(embed("docs/g.md", doc, root)).toBe(
      "# Guide\n\n<!-- examples/b.ts -->\n```ts\nconst x = 1;\n```\n\n<!-- examples/a.md -->\n````md\n```sh\necho hi\n```\n````\ntext after\n",
    );
  });

  it("fills a run block with what the command prints, and leaves a filled block as it is", () => {
    const doc = "<!-- run: echo out; echo err >&2; exit 1 -->\n```text\n```\n";
    const once = embed("docs/g.md", doc, root);
    expect(once).toBe("<!-- run: echo out; echo err >&2; exit 1 -->\n```console\n$ echo out; echo err >&2; exit 1\nout\nerr\n```\n");
    expect(embed("docs/g.md", once, root)).toBe(once);
  });

  it("names the file and line of a marker it cannot fill", () => {
    expect(() => embed("docs/g.md", "text\n<!-- examples/none.ts -->\n```ts\n```\n", root)).toThrow(
      new DocsError("docs/g.md:2: embeds examples/none.ts, which does not exist"),
    );
    expect(() => embed("docs/g.md", "<!-- examples/b.ts -->\nno block\n", root)).toThrow(
      /docs\/g\.md:1: the marker .* must be followed directly by a fenced code block/,
    );
    expect(() => embed("docs/g.md", "<!-- examples/b.ts -->\n```ts\nnever closed\n", root)).toThrow(
      /docs\/g\.md:2: the code block .* is never closed/,
    );
  });

  it("finds links to missing files and headings, outside code", () => {
    write(
      "README.md",
      "[ok](docs/a.md#second-part) [bad](docs/a.md#nope) [gone](docs/gone.md) [web](https://example.com)\n`[code](docs/x.md)`\n```\n[fenced](docs/y.md)\n```\n",
    );
    write("docs/a.md", "# A\n\n## Second part\n\n[up](../README.md) [self](#a)\n");
    expect(brokenLinks(root, ["README.md", "docs/a.md"]).map((b) => `${b.file}:${b.line} ${b.resolved} ${b.problem}`)).toEqual([
      "README.md:1 docs/a.md no heading #nope in docs/a.md",
      "README.md:1 docs/gone.md no such file",
    ]);
  });

  it("reads the commands of a help text: usage with positionals, wrapped descriptions, aliases", () => {
    const help = [
      "turnspec <command> [options]",
      "",
      "Commands:",
      "  turnspec generate            Generate types, validators, registry, client,",
      "                               server, OpenRPC and docs from the schemas",
      "  turnspec diff <old> <new>    Compare two schema folders       [aliases: d]",
      "  turnspec a-command-whose-usage-is-long [files..] [more..]",
      "                               Described on the next line",
      "",
      "Options:",
      "  --help     Show help                                                 [boolean]",
    ].join("\n");
    expect(parseCommands(help)).toEqual([
      {
        name: "generate",
        usage: "turnspec generate",
        describe: "Generate types, validators, registry, client, server, OpenRPC and docs from the schemas",
      },
      { name: "diff", usage: "turnspec diff <old> <new>", describe: "Compare two schema folders" },
      {
        name: "a-command-whose-usage-is-long",
        usage: "turnspec a-command-whose-usage-is-long [files..] [more..]",
        describe: "Described on the next line",
      },
    ]);
    expect(() => parseCommands("turnspec <command>\n\nOptions:\n  --help\n")).toThrow(
      new DocsError("turnspec --help lists no Commands: section"),
    );
  });

  it("makes GitHub's anchors, numbering repeated headings", () => {
    expect([...anchors("# `turnspec serve`: the gateway\n## Windows, recovery and resume\n## Notes\n## Notes\n")]).toEqual([
      "turnspec-serve-the-gateway",
      "windows-recovery-and-resume",
      "notes",
      "notes-1",
    ]);
  });

  it.sequential("cleans up", () => rmSync(root, { recursive: true, force: true }));
});
