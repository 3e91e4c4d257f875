/**
 * `turnspec init [DIR]`: scaffolds a schemas folder that generates cleanly: protocol.json
 * with one method and one notification, errors.json with one error of the protocol's own,
 * the three type files they use, and a README on the conventions; and, when the working
 * folder has none, a turnspec.config.json pointing at it.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { CONFIG_FILE } from "./config.js";
import { META_DIR } from "./meta.js";
import { render } from "./render.js";

export interface InitCommand {
  /** The folder to create; default "schemas". */
  readonly dir: string;
  /** The protocol's title. */
  readonly title: string;
}

const DRAFT = "https://json-schema.org/draft/2020-12/schema";
const BASE = "https://example.com/schemas/";

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
const type = (file: string, title: string, description: string, body: object) => ({
  $schema: DRAFT,
  $id: BASE + file,
  title,
  description,
  ...body,
});

/** The files of a new schemas folder, by name. */
export function scaffold(dir: string, title: string, cwd = process.cwd()): Record<string, string> {
  const meta = (name: string) => relative(dir, join(META_DIR, name)).split("\\").join("/");
  return {
    "protocol.json": json({
      $schema: meta("protocol.schema.json"),
      title,
      version: "0.1.0",
      description: `${title}: JSON-RPC 2.0 methods and notifications. Replace this with what the protocol is for.`,
      schemaBaseUri: BASE,
      errors: { $ref: "errors.json" },
      methods: [
        {
          name: "note/add",
          direction: "client_to_server",
          summary: "Adds a note and returns its id.",
          params: { $ref: "note_add_params.json" },
          result: { $ref: "note_add_result.json" },
          errors: ["note_too_long"],
        },
      ],
      notifications: [
        {
          name: "note/added",
          direction: "server_to_client",
          summary: "A note was added, by this client or another.",
          params: { $ref: "note_added_notification.json" },
        },
      ],
    }),
    "errors.json": json({
      $schema: meta("errors.schema.json"),
      description: "The protocol's own errors. The five standard JSON-RPC errors are implied.",
      errors: [
        {
          code: -32001,
          reason: "note_too_long",
          message: "Note too long",
          description: "The note's text is longer than the server accepts.",
        },
      ],
    }),
    "note_add_params.json": json(
      type("note_add_params.json", "NoteAddParams", "Params of note/add.", {
        type: "object",
        additionalProperties: false,
        required: ["text"],
        properties: { text: { type: "string", minLength: 1, description: "The note's text." } },
      }),
    ),
    "note_add_result.json": json(
      type("note_add_result.json", "NoteAddResult", "Result of note/add.", {
        type: "object",
        additionalProperties: false,
        required: ["id"],
        properties: { id: { type: "string", description: "The new note's id." } },
      }),
    ),
    "note_added_notification.json": json(
      type("note_added_notification.json", "NoteAddedNotification", "Params of note/added.", {
        type: "object",
        additionalProperties: false,
        required: ["id", "text"],
        properties: { id: { type: "string" }, text: { type: "string" } },
      }),
    ),
    "README.md": render("init-README.md", { title, dir: relative(cwd, dir) || "." }),
  };
}

export function runInit(
  command: InitCommand,
  out: { write(text: string): unknown } = process.stdout,
  err: { write(text: string): unknown } = process.stderr,
  cwd = process.cwd(),
): number {
  const dir = resolve(cwd, command.dir);
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    err.write(`turnspec init: ${dir} is not empty; choose a new folder\n`);
    return 2;
  }
  mkdirSync(dir, { recursive: true });
  const files = scaffold(dir, command.title, cwd);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  const shown = relative(cwd, dir) || ".";
  out.write(`created ${shown}/ with ${Object.keys(files).sort().join(", ")}\n`);
  const config = join(cwd, CONFIG_FILE);
  if (!existsSync(config)) {
    writeFileSync(
      config,
      json({ $schema: relative(cwd, join(META_DIR, "config.schema.json")).split("\\").join("/"), schemas: shown, out: "generated" }),
    );
    out.write(`created ${CONFIG_FILE} (schemas: ${shown}, out: generated)\n`);
  }
  out.write("next: turnspec generate (or turnspec generate --watch)\n");
  return 0;
}
