/**
 * The skill tool of a turn that selected skills: reads a selected skill's instructions
 * (the body of its SKILL.md) or one of its files. Its calls are dynamicToolCall items with
 * the dynamic_skill_tool permission kind.
 */
import { defineTool } from "../tools/arguments.js";
import { readSkillPart, type Skill } from "./catalog.js";

export const SKILL_TOOL_NAME = "read_skill";

export function skillTool(skills: readonly Skill[]) {
  const bySlug = new Map(skills.map((s) => [s.slug, s]));
  return defineTool({
    spec: {
      name: SKILL_TOOL_NAME,
      description:
        "Read the instructions of a skill selected for this turn (its SKILL.md body), or one of the skill's files by its path inside the skill's folder.",
      parameters: {
        type: "object",
        additionalProperties: false,
        required: ["skill"],
        properties: {
          skill: { type: "string", enum: [...bySlug.keys()], description: "The skill's slug." },
          path: { type: "string", description: "A file inside the skill's folder, relative to it. Default: SKILL.md's body." },
        },
      },
    },
    itemType: "dynamicToolCall",
    permissionAction: "dynamic_skill_tool",
    describe: () => ({}),
    run: async (args) => {
      // The schema's enum holds the selected skills' slugs: the one named is among them.
      const skill = bySlug.get(args.skill)!;
      try {
        const content = await readSkillPart(skill, args.path);
        return { ok: true, content, item: { output: content } };
      } catch (error) {
        const message = (error as Error).message;
        return { ok: false, content: message, item: { error: { message } } };
      }
    },
  });
}
