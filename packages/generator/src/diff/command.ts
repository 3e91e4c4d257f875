/**
 * `turnspec diff`: reads two schemas folders (or the schemas folder at a git ref), judges
 * the change and prints it; returns the exit code: 0 nothing breaks in the selected
 * mode and categories, 1 something does (or is undetermined, with --strict-undetermined),
 * 2 unreadable schemas or a usage mistake.
 */
import type { ValidationMode } from "../emit/validators.js";
import type { ProtocolModel } from "../model.js";
import { SchemaErrors } from "../schema-error.js";
import { loadAtRef, loadFolder, SchemasUnreadable } from "./folder.js";
import { diffSchemas } from "./index.js";
import { renderMarkdown, renderText } from "./render.js";
import { didYouMean } from "@turnspec/rpc";
import { ConfigError, loadConfig } from "../config.js";
import { RULES } from "./rules.js";
import type { Acceptance, Category } from "./report.js";

export interface DiffCommand {
  /** OLD_DIR, or undefined with `against`. */
  readonly oldDir?: string;
  /** NEW_DIR; with `against`, the schemas folder of the work tree. */
  readonly newDir: string;
  /** A git ref: the old schemas are `newDir` as it was at this ref. */
  readonly against?: string;
  readonly mode: ValidationMode;
  readonly category: "wire" | "code" | "all";
  readonly format: "text" | "json" | "markdown";
  readonly strictUndetermined: boolean;
  /** The config file whose diff.accept lists accepted changes; default turnspec.config.json of the working folder, when there is one. */
  readonly configFile?: string;
}

export const CATEGORIES: Record<DiffCommand["category"], Category[]> = { wire: ["wire"], code: ["code"], all: ["wire", "code"] };

/** Where the command writes: standard output and error, or a test's buffers. */
export interface Output {
  write(text: string): unknown;
}

export async function runDiff(command: DiffCommand, out: Output = process.stdout, err: Output = process.stderr): Promise<number> {
  let oldModel: ProtocolModel;
  let newModel: ProtocolModel;
  try {
    if (command.against !== undefined) oldModel = loadAtRef(command.newDir, command.against);
    else if (command.oldDir !== undefined) oldModel = loadFolder(command.oldDir);
    else {
      err.write("turnspec diff: name the old schemas: OLD_DIR NEW_DIR, or --against REF\n");
      return 2;
    }
    newModel = loadFolder(command.newDir);
  } catch (error) {
    if (error instanceof SchemasUnreadable) {
      err.write(`turnspec diff: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  let accepted: readonly Acceptance[];
  try {
    accepted = loadConfig(command.configFile).config.diff?.accept ?? [];
    for (const a of accepted) {
      if (!Object.hasOwn(RULES, a.rule))
        throw new ConfigError(
          `diff.accept names the rule ${a.rule}, which turnspec diff does not have${didYouMean(a.rule, Object.keys(RULES))}; the rules are listed in docs/diff.md`,
        );
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      err.write(`turnspec diff: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  let report;
  try {
    report = diffSchemas(oldModel, newModel, { mode: command.mode, categories: CATEGORIES[command.category], accepted });
  } catch (error) {
    if (error instanceof SchemaErrors) {
      err.write(`turnspec diff: the validators cannot be compiled from the schemas:\n${error.message}\n`);
      return 2;
    }
    throw error;
  }
  out.write(
    command.format === "json"
      ? JSON.stringify(report, null, 2) + "\n"
      : command.format === "markdown"
        ? renderMarkdown(report)
        : renderText(report),
  );
  if (report.summary.breaking > 0) return 1;
  if (command.strictUndetermined && report.summary.undetermined > 0) return 1;
  return 0;
}
