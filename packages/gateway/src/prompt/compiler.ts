/**
 * The reference prompt compiler: assembles what one provider call is sent, in named
 * sections, and describes it in a prompt manifest (turns-api.md, "Prompt manifest"): the
 * compiler version, the profile, the section ids in prompt order, and sha256 fingerprints
 * of the stable sections (the same from turn to turn while the tools and mode stay), of
 * the dynamic ones (the conversation) and of the whole. The manifest never holds prompt text.
 */
import { createHash } from "node:crypto";
import type { PromptManifest, TurnMode } from "@turnspec/protocol/types";
import type { ChatMessage, ToolSpec } from "../providers/provider.js";

export const PROMPT_COMPILER_VERSION = "1.0.0";

export interface PromptInput {
  readonly mode: TurnMode;
  readonly tools: readonly ToolSpec[];
  /** The conversation as it is sent (after any compression). */
  readonly messages: readonly ChatMessage[];
  /** Skills selected for the turn: each a compact entry of the skills_runtime_prompt section. */
  readonly skills?: readonly SkillEntry[];
  /** Notes to carry in the manifest, e.g. that the history was compressed. */
  readonly diagnostics?: PromptManifest["diagnostics"];
}

/** A selected skill as the prompt names it: the body stays behind the skill tool. */
export interface SkillEntry {
  readonly slug: string;
  readonly name: string;
  readonly description: string;
}

/** The system message of a turn with skills: one line per skill, and how to read one. */
export function skillsPrompt(skills: readonly SkillEntry[]): string {
  return [
    "Skills selected for this turn (read a skill's instructions with the read_skill tool before following it):",
    ...skills.map((s) => `- ${s.slug}: ${s.description}`),
  ].join("\n");
}

interface Section {
  readonly id: string;
  readonly stable: boolean;
  readonly content: unknown;
}

/**
 * The sha256 of the JSON text of `[[id, content], …]` for the sections given, hashed from
 * each section's text (`texts`, by section index) as made once for all three fingerprints:
 * a long conversation is serialised once per prompt, not once per fingerprint it is part of.
 */
function fingerprint(texts: readonly string[], which: readonly number[]): string {
  const hash = createHash("sha256").update("[");
  which.forEach((index, n) => {
    if (n > 0) hash.update(",");
    hash.update(texts[index]!);
  });
  return hash.update("]").digest("hex");
}

/** The manifest of one compiled prompt. */
export function promptManifest(input: PromptInput): PromptManifest {
  const latestUser = input.messages.map((m) => m.role).lastIndexOf("user");
  const sections: Section[] = [
    { id: input.mode === "Agent" ? "agent_mode" : "chat_mode", stable: true, content: input.mode },
    ...(input.tools.length ? [{ id: "tool_catalog", stable: true, content: input.tools }] : []),
    ...(input.skills?.length ? [{ id: "skills_runtime_prompt", stable: true, content: skillsPrompt(input.skills) }] : []),
    ...(input.messages[0]?.role === "system" ? [{ id: "history_summary", stable: false, content: input.messages[0] }] : []),
    {
      id: "conversation_history",
      stable: false,
      content: input.messages.slice(input.messages[0]?.role === "system" ? 1 : 0, Math.max(0, latestUser)),
    },
    { id: "current_turn", stable: false, content: input.messages.slice(Math.max(0, latestUser)) },
  ];
  const texts = sections.map((s) => JSON.stringify([s.id, s.content]));
  const indexes = (stable?: boolean) => sections.flatMap((s, i) => (stable === undefined || s.stable === stable ? [i] : []));
  return {
    compiler_version: PROMPT_COMPILER_VERSION,
    profile: input.mode === "Agent" ? "agent_tools" : "chat",
    section_ids: sections.map((s) => s.id),
    fingerprint_stable: fingerprint(texts, indexes(true)),
    fingerprint_dynamic: fingerprint(texts, indexes(false)),
    fingerprint_full: fingerprint(texts, indexes()),
    diagnostics: [...(input.diagnostics ?? [])],
  };
}
