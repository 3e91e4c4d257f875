/**
 * Turn capabilities (turns-api.md, "Turn capabilities"): the skills, MCP servers and MCP
 * tools a client selected for one turn. Each is normalized, then resolved against what the
 * gateway has, and reported on the turn: accepted with explicit_composer_capability, or
 * rejected with the reason it cannot be honoured. Accepted MCP selections become dynamic
 * provider tools; accepted skills become prompt entries and the skill tool.
 *
 * Normalization: one resolution per capability id (a repeated id is the first entry's);
 * an entry with an empty field, or selecting what an earlier entry already selected, is
 * rejected validation_rejected.
 */
import type {
  PermissionActionKind,
  ToolPermissionPolicySnapshot,
  TurnCapability,
  TurnCapabilityResolution,
} from "@turnspec/protocol/types";
import { decide } from "../permissions/policy.js";
import { InvalidSkill, SkillCatalogMissing, type Skill, type SkillCatalog } from "../skills/catalog.js";
import { SKILL_TOOL_NAME, skillTool } from "../skills/tool.js";
import type { Tool } from "../tools/tool.js";
import { McpServerUnavailable, mcpActionOf, mcpToolName, type McpServers, type McpToolInfo } from "./mcp.js";

type Reason = TurnCapabilityResolution["reason"];

/** What a turn's capabilities gave: how each was resolved, the tools they add, the skills selected. */
export interface ResolvedCapabilities {
  readonly resolutions: TurnCapabilityResolution[];
  readonly tools: Tool[];
  readonly skills: Skill[];
}

export interface ResolveContext {
  /** Agent-mode turns call tools; a Chat-mode turn cannot use an MCP selection. */
  readonly agent: boolean;
  /** The turn's effective policy: a tool it denies outright is disabled_by_policy. */
  readonly policy: ToolPermissionPolicySnapshot;
}

const accepted = (capabilityId: string, message?: string): TurnCapabilityResolution => ({
  capabilityId,
  status: "accepted",
  reason: "explicit_composer_capability",
  ...(message ? { message } : {}),
});
const rejected = (
  capabilityId: string,
  reason: Exclude<Reason, "explicit_composer_capability">,
  message: string,
): TurnCapabilityResolution => ({
  capabilityId,
  status: "rejected",
  reason,
  message,
});

/** The thing a capability selects, as a key: two entries with one key select the same thing. */
function targetOf(capability: TurnCapability): string {
  const kind = capability.kind;
  switch (kind.type) {
    case "skill":
      return `skill\n${kind.sourceKind}\n${kind.slug}`;
    case "mcpServer":
      return `mcpServer\n${kind.scopeKind}\n${kind.name}`;
    case "mcpTool":
      return `mcpTool\n${kind.scopeKind}\n${kind.serverName}\n${kind.rawToolName}`;
  }
}

/** The first empty field of a capability, named as the client sent it. */
function emptyField(capability: TurnCapability): string | undefined {
  if (capability.id.trim() === "") return "id";
  const fields = Object.entries(capability.kind).filter(([key]) => key !== "type");
  return fields.find(([, value]) => typeof value === "string" && value.trim() === "")?.[0];
}

export class CapabilityResolver {
  constructor(
    private readonly mcp: McpServers,
    private readonly skills: SkillCatalog,
  ) {}

  async resolve(capabilities: readonly TurnCapability[], context: ResolveContext): Promise<ResolvedCapabilities> {
    const seenIds = new Set<string>();
    const seenTargets = new Map<string, string>();
    const slots: (TurnCapabilityResolution | TurnCapability)[] = [];
    for (const capability of capabilities) {
      if (seenIds.has(capability.id)) continue;
      seenIds.add(capability.id);
      const empty = emptyField(capability);
      if (empty) {
        slots.push(rejected(capability.id, "validation_rejected", `the ${empty} of this ${capability.kind.type} capability is empty`));
        continue;
      }
      const target = targetOf(capability);
      const earlier = seenTargets.get(target);
      if (earlier !== undefined) {
        slots.push(rejected(capability.id, "validation_rejected", `selects the same ${capability.kind.type} as capability ${earlier}`));
        continue;
      }
      seenTargets.set(target, capability.id);
      slots.push(capability);
    }

    // Each server selected is listed once, however many entries name it.
    const listings = new Map<string, Promise<McpToolInfo[]>>();
    const listing = (server: string) => {
      let tools = listings.get(server);
      if (!tools) listings.set(server, (tools = this.mcp.listTools(server)));
      return tools;
    };
    const tools = new Map<string, Tool>();
    /** Which server's tool each offered name calls: `server/tool`. */
    const owners = new Map<string, string>();
    const skills: Skill[] = [];
    const resolutions = await Promise.all(
      slots.map(async (slot) => {
        if ("status" in slot) return slot;
        const { kind, id } = slot;
        if (kind.type === "skill") {
          const result = await this.skill(id, kind.slug, kind.sourceKind);
          if (result.skill) skills.push(result.skill);
          return result.resolution;
        }
        const serverName = kind.type === "mcpServer" ? kind.name : kind.serverName;
        const server = this.mcp.config(serverName);
        if (!server) {
          const names = this.mcp.names();
          return rejected(
            id,
            "not_found",
            `no MCP server named ${serverName} is configured on this gateway${names.length ? ` (configured: ${names.join(", ")})` : " (none is)"}`,
          );
        }
        if (server.scope !== kind.scopeKind)
          return rejected(id, "not_found", `the MCP server ${serverName} is configured in scope ${server.scope}, not ${kind.scopeKind}`);
        if (!context.agent)
          return rejected(id, "provider_unsupported", "a Chat-mode turn calls no tools, so MCP tools cannot be offered; use Agent mode");
        let offered: McpToolInfo[];
        try {
          offered = await listing(serverName);
        } catch (error) {
          return rejected(
            id,
            "dependency_missing",
            error instanceof McpServerUnavailable ? error.message : `MCP server ${serverName} failed: ${(error as Error).message}`,
          );
        }
        const chosen = kind.type === "mcpServer" ? offered : offered.filter((t) => t.name === kind.rawToolName);
        if (kind.type === "mcpTool" && chosen.length === 0) {
          return rejected(
            id,
            "tool_missing",
            `the MCP server ${serverName} has no tool ${kind.rawToolName} (its tools: ${offered.map((t) => t.name).join(", ") || "none"})`,
          );
        }
        const allowed = chosen.filter((t) => !denied(context.policy, mcpToolName(serverName, t.name), mcpActionOf(t, server)));
        if (allowed.length === 0)
          return rejected(
            id,
            "disabled_by_policy",
            `the turn's permission policy denies ${kind.type === "mcpTool" ? "this tool" : "every tool of this server"}`,
          );
        // The name the model calls a tool by must name one tool: two that come out the same
        // (a.b and a_b, a server named x__y) would let the later one answer for the earlier,
        // with its own permission kind. The one listed first keeps the name; the others are not offered.
        const clashes: string[] = [];
        let offeredCount = 0;
        for (const info of allowed) {
          const name = mcpToolName(serverName, info.name);
          const owner = `${serverName}/${info.name}`;
          const taken = owners.get(name);
          if (taken !== undefined && taken !== owner) {
            clashes.push(`${info.name} (its name ${name} is ${taken}'s already)`);
            continue;
          }
          owners.set(name, owner);
          tools.set(name, this.mcp.toolFor(serverName, info));
          offeredCount++;
        }
        if (offeredCount === 0)
          return rejected(id, "validation_rejected", `no tool can be offered under a name of its own: ${clashes.join("; ")}`);
        const left = chosen.length - allowed.length;
        const notes = [
          left ? `${left} denied by the turn's policy` : "",
          clashes.length ? `not offered, their names being taken: ${clashes.join("; ")}` : "",
        ].filter(Boolean);
        return accepted(
          id,
          kind.type === "mcpServer" || notes.length
            ? `${offeredCount} tools offered${notes.length ? ` (${notes.join("; ")})` : ""}`
            : undefined,
        );
      }),
    );
    if (skills.length && context.agent && !denied(context.policy, SKILL_TOOL_NAME, "dynamic_skill_tool"))
      tools.set(SKILL_TOOL_NAME, skillTool(skills));
    return { resolutions, tools: [...tools.values()], skills };
  }

  private async skill(id: string, slug: string, sourceKind: string): Promise<{ resolution: TurnCapabilityResolution; skill?: Skill }> {
    if (!this.skills.configured)
      return { resolution: rejected(id, "not_found", `no skill ${slug}: this gateway has no skill folders configured`) };
    try {
      const skill = await this.skills.find(slug, sourceKind);
      if (!skill) return { resolution: rejected(id, "not_found", `no skill ${slug} in the ${sourceKind} skill folders`) };
      return { resolution: accepted(id), skill };
    } catch (error) {
      if (error instanceof SkillCatalogMissing) return { resolution: rejected(id, "catalog_missing", error.message) };
      if (error instanceof InvalidSkill) return { resolution: rejected(id, "validation_rejected", error.message) };
      throw error;
    }
  }
}

function denied(policy: ToolPermissionPolicySnapshot, toolName: string, action: PermissionActionKind): boolean {
  return decide(policy, toolName, action) === "deny";
}
