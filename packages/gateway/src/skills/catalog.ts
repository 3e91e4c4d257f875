/**
 * Skills in the Agent Skills layout: a configured folder holds one sub-folder per skill,
 * each with a SKILL.md whose YAML front matter names the skill (`name`) and says when to
 * use it (`description`); the markdown after it is the skill's body. A skill's slug is
 * `SOURCE_KIND/NAME`, as a turn capability names it (`workspace/weather`).
 *
 * The folders are read when a turn selects a skill, so a skill added or changed while the
 * gateway runs is seen by the next turn.
 */
import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { join, relative, resolve, sep } from "node:path";

export interface Skill {
  readonly slug: string;
  readonly name: string;
  readonly description: string;
  readonly sourceKind: string;
  /** The skill's folder (real path). */
  readonly dir: string;
}

/** A folder that could not be read as a skills folder: the capability is catalog_missing. */
export class SkillCatalogMissing extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SkillCatalogMissing";
  }
}

/** A SKILL.md that is not a skill: the capability is validation_rejected. */
export class InvalidSkill extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InvalidSkill";
  }
}

export interface SkillFolder {
  readonly path: string;
  readonly sourceKind: string;
}

/** The front matter and body of a SKILL.md. */
export async function readSkillFile(file: string): Promise<{ name: string; description: string; body: string }> {
  const text = await readFile(file, "utf8");
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!match)
    throw new InvalidSkill(
      `${file} has no front matter: it must start with a --- line, the YAML fields name and description, and a closing --- line`,
    );
  const { load } = await import("js-yaml");
  let front: unknown;
  try {
    front = load(match[1]!);
  } catch (error) {
    throw new InvalidSkill(`${file}: the front matter is not valid YAML (${(error as Error).message.split("\n", 1)[0]})`);
  }
  const fields = (front ?? {}) as Record<string, unknown>;
  for (const field of ["name", "description"] as const) {
    if (typeof fields[field] !== "string" || (fields[field] as string).trim() === "")
      throw new InvalidSkill(`${file}: the front matter needs a non-empty ${field} string`);
  }
  return { name: (fields.name as string).trim(), description: (fields.description as string).trim(), body: match[2]! };
}

export class SkillCatalog {
  constructor(private readonly folders: readonly SkillFolder[]) {}

  get configured(): boolean {
    return this.folders.length > 0;
  }

  /**
   * The skill `slug` names, or undefined when no folder of its source kind has it. Throws
   * SkillCatalogMissing when a folder of that source kind cannot be read, InvalidSkill
   * when the skill's SKILL.md is malformed.
   */
  async find(slug: string, sourceKind: string): Promise<Skill | undefined> {
    const prefix = `${sourceKind}/`;
    if (!slug.startsWith(prefix)) return undefined;
    const name = slug.slice(prefix.length);
    for (const folder of this.folders.filter((f) => f.sourceKind === sourceKind)) {
      let entries: string[];
      try {
        entries = (await readdir(folder.path, { withFileTypes: true }))
          .filter((e) => e.isDirectory() || e.isSymbolicLink())
          .map((e) => e.name);
      } catch (error) {
        throw new SkillCatalogMissing(
          `the skills folder ${folder.path} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        );
      }
      // The folder is usually named after the skill; a differently named one is found by its front matter.
      for (const entry of [...entries.filter((e) => e === name), ...entries.filter((e) => e !== name)]) {
        const file = join(folder.path, entry, "SKILL.md");
        if (!(await exists(file))) continue;
        if (entry !== name) {
          const read = await readSkillFile(file).catch(() => undefined);
          if (read?.name !== name) continue;
        }
        const read = await readSkillFile(file);
        if (read.name !== name)
          throw new InvalidSkill(
            `${file} names the skill ${JSON.stringify(read.name)}, but its folder is ${entry}: the front matter name must match the folder`,
          );
        return { slug, name, description: read.description, sourceKind, dir: await realpath(join(folder.path, entry)) };
      }
    }
    return undefined;
  }
}

/**
 * Reads a file of a skill for the skill tool: SKILL.md's body by default, or a file
 * inside the skill's folder. A path leading outside the folder (by `..` or a link) is refused.
 */
export async function readSkillPart(skill: Skill, path: string | undefined): Promise<string> {
  if (path === undefined || path === "" || path === "SKILL.md") return (await readSkillFile(join(skill.dir, "SKILL.md"))).body;
  const target = resolve(skill.dir, path);
  let real: string;
  try {
    real = await realpath(target);
  } catch {
    throw new Error(`${path} is not a file of the skill ${skill.slug}${await listing(skill)}`);
  }
  if (real !== skill.dir && !real.startsWith(skill.dir + sep))
    throw new Error(`${path} leads outside the skill ${skill.slug}; only its own files can be read`);
  if (!(await stat(real)).isFile()) throw new Error(`${path} is a folder of the skill ${skill.slug}, not a file${await listing(skill)}`);
  return readFile(real, "utf8");
}

/** " (its files: a, b/c)": the files of a skill, for an error that names a wrong one. */
async function listing(skill: Skill): Promise<string> {
  const files: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (files.length >= 50) return;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else files.push(relative(skill.dir, full));
    }
  };
  await walk(skill.dir).catch(() => undefined);
  return files.length ? ` (its files: ${files.sort().join(", ")})` : "";
}

async function exists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
