/**
 * A deterministic corpus of realistic agent-gateway traffic for the benchmarks: whole
 * simulated turns (turn/start and its response, the item stream with every TurnItem
 * variant and many deltas, permission prompts, execution windows, retries and recovery,
 * the turn/work page a client loads afterwards, delegation routes), serialized one
 * JSON-RPC message per string as they would cross the wire.
 *
 * Seeded PRNG only (no Math.random, no clock): the same seed gives byte-identical
 * messages. Every message is checked in strict mode while the corpus is built, and the
 * build throws if one is not valid, so the benchmarks measure the success path.
 */
import { classify } from "@turnspec/rpc";
import { methods, notifications, type MethodName, type NotificationName } from "../generated/registry.js";
import { validate, type TypeName } from "../generated/validators.js";
import { isMain } from "./lib.js";

export type MessageKind = "request" | "response" | "notification";

export interface CorpusMessage {
  readonly kind: MessageKind;
  /** The method (for a response: the method of the request it answers, as a client's pending table knows it). */
  readonly method: string;
  /** The schema type of the payload: params of requests and notifications, result of responses. */
  readonly type: TypeName;
  /** The serialized message, exactly the bytes of one frame. */
  readonly text: string;
}

export interface CorpusOptions {
  readonly seed?: number;
  /** Turns are simulated until at least this many messages exist (a turn is never cut short). */
  readonly minMessages?: number;
}

/** The parsed payload a validator sees: params of requests and notifications, result of responses. */
export function payloadOf(message: { params?: unknown; result?: unknown }, kind: MessageKind): unknown {
  return kind === "response" ? message.result : message.params;
}

// ---------------------------------------------------------------------------------------
// Seeded randomness

class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** mulberry32: a uniform float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  /** Up to `max` distinct items, in their original order. */
  some<T>(items: readonly T[], min: number, max: number): T[] {
    const n = this.int(min, Math.min(max, items.length));
    const chosen = new Set<number>();
    while (chosen.size < n) chosen.add(Math.floor(this.next() * items.length));
    return [...chosen].sort((a, b) => a - b).map((i) => items[i]!);
  }
  hex(n: number): string {
    let s = "";
    for (let i = 0; i < n; i++) s += "0123456789abcdef"[Math.floor(this.next() * 16)];
    return s;
  }
}

// ---------------------------------------------------------------------------------------
// Vocabulary

const WORDS = [
  "the",
  "a",
  "to",
  "of",
  "and",
  "in",
  "is",
  "for",
  "that",
  "this",
  "with",
  "it",
  "on",
  "we",
  "can",
  "be",
  "module",
  "function",
  "schema",
  "gateway",
  "client",
  "server",
  "request",
  "response",
  "turn",
  "thread",
  "validator",
  "protocol",
  "notification",
  "stream",
  "delta",
  "field",
  "type",
  "union",
  "variant",
  "error",
  "config",
  "project",
  "workspace",
  "tests",
  "build",
  "file",
  "directory",
  "import",
  "export",
  "interface",
  "permission",
  "sandbox",
  "policy",
  "network",
  "process",
  "command",
  "output",
  "result",
  "cursor",
  "page",
  "first",
  "then",
  "next",
  "finally",
  "because",
  "however",
  "instead",
  "also",
  "only",
  "every",
  "each",
  "reads",
  "writes",
  "checks",
  "returns",
  "calls",
  "parses",
  "emits",
  "loads",
  "renders",
  "updates",
  "architecture",
  "dependency",
  "package",
  "runtime",
  "handler",
  "dispatcher",
  "transport",
  "registry",
  "naïve",
  "résumé",
  "→",
  "✅",
  "`npm test`",
  "`src/index.ts`",
  '"strict"',
  "(optional)",
  "e.g.",
  "—",
];
const SENTENCE_END = [".", ".", ".", ":", "!", "?", ".\n\n", ".\n"];
const PROMPTS = [
  "Inspect the project and summarize the architecture.",
  "Why does `npm test` fail on CI but not locally?",
  "Refactor the transport layer so that WebSocket and stdio share one framing module.",
  "Add a --json flag to the validate command and update the docs.",
  "Find every place where we swallow errors from the dispatcher and report them.",
  "Write a migration guide from protocol 0.0.x to 0.1.0 (keep it short).",
  "Summarize the open pull requests and tell me which ones touch the schemas folder.",
  "Draft an email to the team about the release — include the changelog.",
  "Compare the strict and tolerant validators: which messages differ?",
  "Résumé the last three turns in this thread for the weekly report ✅",
];
const PATHS = [
  "src/index.ts",
  "src/transport/stdio.ts",
  "src/transport/websocket.ts",
  "src/rpc/dispatcher.ts",
  "package.json",
  "README.md",
  "docs/protocol.md",
  "test/dispatcher.test.ts",
  "schemas/turn.json",
  "generator/emit/validators.ts",
  "bench/run.ts",
  "CHANGELOG.md",
  ".github/workflows/ci.yml",
];
const COMMANDS = [
  "npm test",
  "npm run build",
  "git status --short",
  "git log --oneline -n 20",
  "ls -la src",
  'rg -n "TODO" src',
  "node --version",
  "npx tsc --noEmit",
  "cat package.json",
  "pytest -q",
  "make lint",
  "du -sh node_modules",
];
const SKILLS = ["workspace/documents", "workspace/weather", "workspace/spreadsheets", "builtin/pdf", "team/release-notes"];
const MCP_SERVERS = ["resend", "github", "linear", "postgres", "filesystem", "slack"];
const MCP_TOOLS = ["send_email", "add_contact", "create_issue", "list_pull_requests", "query", "read_file", "post_message"];
const MODELS: readonly (readonly [string, string])[] = [
  ["openai", "gpt-5.4"],
  ["openai", "gpt-5.4-mini"],
  ["anthropic", "claude-sonnet-4.5"],
  ["anthropic", "claude-opus-4.1"],
  ["google", "gemini-2.5-pro"],
  ["openrouter", "qwen3-coder"],
];
const DOMAINS = ["github.com", "api.github.com", "registry.npmjs.org", "docs.python.org", "example.com", "developer.mozilla.org"];
const TOOL_NAMES = ["shell", "apply_patch", "web_search", "web_fetch", "download", "task", "resend__send_email", "github__create_issue"];
const PERMISSION_MODES = ["full_access", "auto_accept_edits", "supervised"] as const;
type PermissionMode = (typeof PERMISSION_MODES)[number];

// ---------------------------------------------------------------------------------------
// The simulation

const BASE_MS = Date.UTC(2025, 2, 3, 9, 0, 0);

class Simulator {
  readonly out: CorpusMessage[] = [];
  private clockMs = BASE_MS;
  private nextRequestId = 1;
  private threadCounter = 0;
  private turnCounter = 0;
  private itemCounter = 0;
  private permCounter = 0;
  private routeCounter = 0;
  private miscCounter = 0;
  private projectionVersion = 1;

  constructor(private readonly rng: Rng) {}

  // ---- ids, time and text

  private pad(n: number): string {
    return String(n).padStart(18, "0");
  }
  private id(prefix: string, n: number): string {
    return `${prefix}_${this.pad(n)}`;
  }
  private tick(minMs: number, maxMs: number): void {
    this.clockMs += this.rng.int(minMs, maxMs);
  }
  private iso(): string {
    return new Date(this.clockMs).toISOString();
  }
  private micros(): number {
    return this.clockMs * 1000 + this.rng.int(0, 999);
  }
  private words(min: number, max: number): string {
    const n = this.rng.int(min, max);
    const parts: string[] = [];
    for (let i = 0; i < n; i++) parts.push(this.rng.pick(WORDS));
    return parts.join(" ");
  }
  private sentence(): string {
    const s = this.words(4, 16);
    return s.charAt(0).toUpperCase() + s.slice(1) + this.rng.pick(SENTENCE_END);
  }
  private paragraph(min: number, max: number): string {
    const n = this.rng.int(min, max);
    let text = "";
    for (let i = 0; i < n; i++) text += (i ? " " : "") + this.sentence();
    return text.trim();
  }
  /** Splits text into small stream fragments, as a provider streams tokens. */
  private fragments(text: string, min: number, max: number): string[] {
    const out: string[] = [];
    let i = 0;
    while (i < text.length) {
      const n = this.rng.int(min, max);
      out.push(text.slice(i, i + n));
      i += n;
    }
    return out;
  }
  private requestId(): string | number {
    const n = this.nextRequestId++;
    return this.rng.chance(0.5) ? n : `req_${this.rng.hex(12)}_${n}`;
  }

  // ---- emitting

  private emit(kind: MessageKind, method: string, type: string, message: object): void {
    this.out.push({ kind, method, type: type as TypeName, text: JSON.stringify(message) });
  }
  request(method: MethodName, params: object): string | number {
    const id = this.requestId();
    this.emit("request", method, methods[method].params, { jsonrpc: "2.0", id, method, params });
    return id;
  }
  response(method: MethodName, id: string | number, result: object): void {
    this.emit("response", method, methods[method].result, { jsonrpc: "2.0", id, result });
  }
  notify(method: NotificationName, params: object): void {
    this.emit("notification", method, notifications[method].params, { jsonrpc: "2.0", method, params });
  }

  // ---- building blocks

  private userInput(): object {
    switch (this.rng.int(0, 11)) {
      case 0:
      case 1:
      case 2:
      case 3:
        return {
          type: "text",
          text: this.rng.chance(0.5) ? this.rng.pick(PROMPTS) : this.paragraph(1, 4),
          textElements: this.rng.chance(0.7) ? [] : [{ kind: "mention", start: 0, end: this.rng.int(3, 12), ref: this.rng.pick(PATHS) }],
        };
      case 4:
        return { type: "localFile", path: `/Users/alex/Code/pioneer/${this.rng.pick(PATHS)}` };
      case 5:
        return { type: "localImage", path: `/tmp/screenshot-${this.rng.int(1, 99)}.png` };
      case 6:
        return { type: "image", url: `https://example.com/images/${this.rng.hex(8)}.png` };
      case 7:
        return { type: "artifact", artifactId: this.id("art", this.rng.int(1, 5000)) };
      case 8:
        return {
          type: "mention",
          name: this.rng.pick(["repo", "docs", "issue", "design"]),
          path: `app://github/${this.rng.pick(["repo", "issues/42", "pulls/7"])}`,
        };
      case 9:
        return {
          type: "file",
          url: `https://files.example.com/${this.rng.hex(10)}.pdf`,
          ...(this.rng.chance(0.6) ? { name: "report.pdf", mimeType: "application/pdf" } : {}),
        };
      case 10:
        return {
          type: "audio",
          url: `https://files.example.com/${this.rng.hex(10)}.m4a`,
          ...(this.rng.chance(0.5) ? { mimeType: "audio/mp4" } : {}),
        };
      default:
        return {
          type: "video",
          url: `https://files.example.com/${this.rng.hex(10)}.mp4`,
          ...(this.rng.chance(0.5) ? { mimeType: "video/mp4" } : {}),
        };
    }
  }

  private capability(i: number): object {
    const label = this.rng.chance(0.8);
    switch (this.rng.int(0, 2)) {
      case 0: {
        const slug = this.rng.pick(SKILLS);
        return {
          id: `cap_skill_${i}`,
          ...(label ? { label: slug.split("/")[1] } : {}),
          kind: { type: "skill", slug, sourceKind: this.rng.pick(["workspace", "builtin", "team"]) },
        };
      }
      case 1: {
        const name = this.rng.pick(MCP_SERVERS);
        return {
          id: `cap_${name}_${i}`,
          ...(label ? { label: name } : {}),
          kind: { type: "mcpServer", name, scopeKind: this.rng.pick(["workspace", "user"]) },
        };
      }
      default: {
        const serverName = this.rng.pick(MCP_SERVERS);
        const rawToolName = this.rng.pick(MCP_TOOLS);
        return {
          id: `cap_${serverName}_${rawToolName}_${i}`,
          ...(label ? { label: `${serverName} / ${rawToolName}` } : {}),
          kind: { type: "mcpTool", serverName, rawToolName, scopeKind: "workspace" },
        };
      }
    }
  }

  private policy(mode: PermissionMode, extra: boolean): object {
    const allowAll = mode === "full_access";
    const edits = mode === "auto_accept_edits";
    const b = (allowed: boolean) => (allowAll || allowed ? "allow" : "ask");
    return {
      default_behavior: b(false),
      file_read: "allow",
      file_write: b(edits),
      shell_command: b(false),
      network: b(false),
      mcp_read: "allow",
      mcp_write_or_unknown: b(false),
      dynamic_skill_tool: b(false),
      computer_use: b(false),
      task_subagent: b(false),
      ...(extra
        ? {
            allowed_tools: this.rng.some(TOOL_NAMES, 1, 3),
            denied_tools: this.rng.some(TOOL_NAMES, 0, 2),
            allowed_paths: ["/Users/alex/Code/pioneer"],
          }
        : {}),
    };
  }

  private profileSnapshot(mode: PermissionMode, source: string): object {
    return { mode, source, effective_policy: this.policy(mode, this.rng.chance(0.2)) };
  }

  private security(mode: PermissionMode, profile: object, backendKind: string, child: boolean): object {
    const cwd = "/Users/alex/Code/pioneer";
    const unrestricted = mode === "full_access";
    const write = mode === "auto_accept_edits" ? "read_write" : "read_only";
    const degraded = this.rng.chance(0.15);
    return {
      permission_profile: profile,
      sandbox: {
        mode: unrestricted ? "unrestricted" : mode === "auto_accept_edits" ? "workspace_write" : "read_only",
        cwd,
        filesystem: {
          unrestricted,
          entries: unrestricted
            ? []
            : [
                { path: cwd, access: write, kind: "workspace" },
                { path: `${cwd}/packages/core`, access: write, kind: "project" },
                { path: "/Applications/Pioneer.app", access: "read_only", kind: "app" },
                { path: "/tmp/pioneer/turn", access: "read_write", kind: "temp" },
              ],
          outside_roots: unrestricted ? "allow" : "ask",
        },
        temp_policy: unrestricted ? "host" : "per_turn",
        network_enabled: unrestricted,
        sandbox_escape: unrestricted ? "not_applicable" : "review",
        backend_requirement: unrestricted ? "none" : "best_effort",
        backend_preference: unrestricted ? null : this.rng.pick(["seatbelt", "landlock", "bubblewrap"]),
      },
      process: {
        shell: unrestricted ? "allow" : "ask",
        environment: unrestricted
          ? { mode: "inherit_all" }
          : { mode: "allow_list", allowed_variables: ["PATH", "HOME", "LANG", "TERM", "TMPDIR"] },
        timeout_cap_ms: unrestricted ? null : 600000,
        command_risk_rules: unrestricted
          ? []
          : [
              { pattern: "^rm -rf", behavior: "deny", reason: "destructive" },
              { pattern: "^git push", behavior: "ask" },
              { pattern: "^curl .*\\| *sh", behavior: "deny", reason: "remote script execution" },
            ],
      },
      network: unrestricted
        ? { mode: "enabled", allow_domains: [], deny_domains: [] }
        : { mode: "disabled", allow_domains: this.rng.some(DOMAINS, 0, 3), deny_domains: [] },
      approval: { scopes: unrestricted ? [] : ["allow_once", "allow_for_turn"] },
      backend: {
        kind: backendKind,
        sandbox_backend: unrestricted ? null : this.rng.pick(["seatbelt", "landlock"]),
        capabilities: ["filesystem", "process", ...(unrestricted ? ["network"] : [])],
      },
      enforcement: degraded
        ? {
            status: "partially_active",
            degradations: [{ capability: "network", reason: "backend_unsupported", detail: "the sandbox backend cannot filter domains" }],
          }
        : { status: "active", degradations: [] },
      ...(child
        ? {
            parent_cap: {
              parent_thread_id: this.id("thr", this.rng.int(1, this.threadCounter)),
              parent_turn_id: this.id("trn", this.rng.int(1, this.turnCounter)),
              parent_mode: "supervised",
              capped_policy: this.policy("supervised", false),
              source: "task_permission_cap",
            },
          }
        : {}),
    };
  }

  private promptManifest(): object {
    return {
      compiler_version: "0.1.0",
      profile: this.rng.pick(["assistant_full", "assistant_chat", "task_subagent"]),
      section_ids: this.rng.some(
        ["identity_base", "assistant_safety", "skills_runtime_prompt", "tool_guidelines", "workspace_context", "memory"],
        2,
        6,
      ),
      fingerprint_stable: `sha256:${this.rng.hex(64)}`,
      fingerprint_dynamic: `sha256:${this.rng.hex(64)}`,
      fingerprint_full: `sha256:${this.rng.hex(64)}`,
      diagnostics: this.rng.chance(0.3)
        ? [{ severity: "warning", message: "skill prompt truncated to budget", section_id: "skills_runtime_prompt" }]
        : [],
    };
  }

  private presentation(): object {
    return {
      identity_id: this.id("idn", this.rng.int(1, 40)),
      execution_id: this.id("exe", this.rng.int(1, 4000)),
      source: "agent_registry",
      revision: this.rng.int(0, 12),
      display_name: this.rng.pick(["Researcher", "Reviewer", "Release bot", "Planner"]),
      ...(this.rng.chance(0.5) ? { nickname: "rev" } : {}),
      avatar_revision: this.rng.chance(0.5) ? this.rng.int(0, 9) : null,
      role_presentation: this.rng.chance(0.6) ? { role: "reviewer", label: "Code reviewer" } : null,
    };
  }

  private outputPolicy(totalBytes: number): object {
    const max = 16384;
    return { max_display_bytes: max, truncated: totalBytes > max, total_bytes: totalBytes };
  }

  // ---- one turn

  private threadId = "";
  private workspaceId = "";
  private turnId = "";
  private sequence = 0;
  private seq(): number {
    return ++this.sequence;
  }

  startThread(): void {
    const [provider, model] = this.rng.pick(MODELS);
    const threadNo = ++this.threadCounter;
    this.threadId = this.id("thr", threadNo);
    this.workspaceId = this.id("ws", this.rng.int(1, 3));
    const params = {
      workspace_id: this.workspaceId,
      cwd: "/Users/alex/Code/pioneer",
      model_provider: provider,
      model,
      mode: this.rng.pick(["Chat", "Agent"]),
    };
    const id = this.request("thread/start", params);
    this.tick(5, 40);
    this.response("thread/start", id, {
      thread: {
        id: this.threadId,
        workspace_id: this.workspaceId,
        cwd: params.cwd,
        model_provider: provider,
        model,
        mode: params.mode,
        created_at: this.iso(),
      },
    });
  }

  /** A new thread with one to four turns. */
  runThread(): void {
    this.startThread();
    const turns = this.rng.int(1, 4);
    for (let t = 0; t < turns; t++) this.runTurn();
  }

  runTurn(): void {
    const rng = this.rng;
    this.turnId = this.id("trn", ++this.turnCounter);
    this.sequence = 0;
    const threadId = this.threadId;
    const turnId = this.turnId;
    const base = { thread_id: threadId, turn_id: turnId };
    const mode: PermissionMode | undefined = rng.chance(0.8) ? rng.pick(PERMISSION_MODES) : undefined;
    const effectiveMode: PermissionMode = mode ?? "full_access";
    const turnMode = rng.chance(0.85) ? "Agent" : "Chat";
    const [provider, model] = rng.pick(MODELS);
    const capabilities = rng.chance(0.6) ? Array.from({ length: rng.int(1, 4) }, (_, i) => this.capability(i)) : undefined;
    const input = Array.from({ length: rng.int(1, 4) }, () => this.userInput());
    if (!input.some((i) => (i as { type: string }).type === "text"))
      input.unshift({ type: "text", text: rng.pick(PROMPTS), textElements: [] });
    const backendChoice = rng.int(0, 5);
    const executionBackend =
      backendChoice === 0
        ? { type: "apiProvider", provider }
        : backendChoice === 1
          ? { type: "cliAgentRuntime", runtime_id: "codex", runtime_kind: "codex" }
          : backendChoice === 2
            ? { type: "acpAgentRuntime", runtime_id: "acp_claude" }
            : undefined;
    const child = rng.chance(0.1);

    // turn/start
    const startParams = {
      ...base,
      ...(rng.chance(0.7) ? { mode: turnMode } : {}),
      ...(mode
        ? {
            permission_profile: {
              mode,
              ...(rng.chance(0.2)
                ? { allowed_tools: ["shell"], denied_tools: ["computer_use"], allowed_paths: ["/Users/alex/Code/pioneer"] }
                : {}),
            },
          }
        : {}),
      ...(rng.chance(0.25) ? { sandbox_policy: { mode: "FullAccess" } } : {}),
      input,
      ...(capabilities ? { capabilities } : {}),
      ...(rng.chance(0.4) ? { model, model_provider: provider } : {}),
      ...(executionBackend ? { execution_backend: executionBackend } : {}),
      ...(executionBackend?.type === "cliAgentRuntime"
        ? {
            cli_runtime_options: {
              effort: rng.pick(["low", "medium", "high"]),
              personality: "concise",
              ...(rng.chance(0.5) ? { summary: "auto", sandbox: "workspace-write" } : {}),
              steer_if_active: rng.chance(0.5),
            },
          }
        : {}),
    };
    const startId = this.request("turn/start", startParams);
    this.tick(20, 200);
    const profile = this.profileSnapshot(effectiveMode, mode ? "composer" : child ? "inherited_from_parent_turn" : "defaulted");
    const backendKind = executionBackend?.type === "cliAgentRuntime" ? "codex_cli" : "native";
    const createdAt = this.iso();
    const turnModel = (status: string, extra: object = {}): object => ({
      id: turnId,
      thread_id: threadId,
      workspace_id: this.workspaceId,
      status,
      mode: turnMode,
      created_at: createdAt,
      model_provider: provider,
      model,
      prompt_manifest: promptManifest,
      permission_profile: profile,
      security,
      ...(resolutions.length ? { capabilities: resolutions } : {}),
      ...(child
        ? {
            parent_turn_id: this.id("trn", Math.max(1, this.turnCounter - 1)),
            parent_thread_id: this.id("thr", Math.max(1, this.threadCounter - 1)),
            actor: {
              kind: "agent",
              identity_id: this.id("idn", 3),
              execution_id: this.id("exe", this.turnCounter),
              presentation: this.presentation(),
            },
          }
        : { actor: { kind: "user" } }),
      ...extra,
    });
    const promptManifest = turnMode === "Agent" && rng.chance(0.7) ? this.promptManifest() : null;
    const security = this.security(effectiveMode, profile, backendKind, child);
    const resolutions = (capabilities ?? []).map((c) => {
      const accepted = rng.chance(0.8);
      return {
        capabilityId: (c as { id: string }).id,
        status: accepted ? "accepted" : "rejected",
        reason: accepted
          ? "explicit_composer_capability"
          : rng.pick([
              "not_found",
              "disabled_by_policy",
              "validation_rejected",
              "security_blocked",
              "dependency_missing",
              "catalog_missing",
              "tool_missing",
              "provider_unsupported",
            ]),
        ...(accepted ? {} : { message: "the capability could not be resolved for this turn" }),
      };
    });
    this.response("turn/start", startId, { turn: turnModel("InProgress") });
    this.notify("turn/started", { ...base, sequence: this.seq(), turn: turnModel("InProgress") });
    this.notify("thread/timeline/blocks/changed", { threadId, changedBlockIds: [`blk_${turnId}`], turnId });

    if (rng.chance(0.15)) {
      const before = rng.int(40, 400);
      this.notify("context/compressing", {
        ...base,
        sequence: this.seq(),
        reason: "summarized",
        messages_before: before,
        estimated_tokens: rng.int(80000, 190000),
      });
      this.tick(500, 4000);
      this.notify("context/compressed", {
        ...base,
        sequence: this.seq(),
        reason: rng.pick(["summarized", "truncated"]),
        summarized_messages: before - 20,
        messages_after: 21,
        ...(rng.chance(0.7) ? { summary_preview: this.sentence() } : {}),
      });
    }

    let windowIndex = 0;
    let windowId = `win_${turnId}_0`;
    const limits = {
      max_agent_rounds_per_window: 40,
      max_tool_calls_per_window: 120,
      max_wall_clock_ms_per_window: 900000,
      max_provider_tokens_per_window: 400000,
    };
    if (turnMode === "Agent")
      this.notify("turn/execution_window/started", {
        ...base,
        sequence: this.seq(),
        window_id: windowId,
        window_index: 0,
        limits,
        status: "running",
      });

    const workItems: object[] = [];
    const itemStart = (item: Record<string, unknown>): number => {
      const createdAtUnixMicros = this.micros();
      this.notify("item/started", { ...base, sequence: this.seq(), item_id: item.id as string, item });
      return createdAtUnixMicros;
    };
    const itemDone = (item: Record<string, unknown>, createdAtUnixMicros: number): void => {
      this.tick(1, 50);
      const sourceSequence = this.seq();
      this.notify("item/completed", { ...base, sequence: sourceSequence, item_id: item.id as string, item });
      const updated = this.micros();
      workItems.push({
        workItemId: `work_${item.id as string}`,
        item,
        status: item.status,
        itemType: item.type,
        orderKey: String(workItems.length + 1).padStart(8, "0"),
        createdAtUnixMicros,
        updatedAtUnixMicros: updated,
        sourceSequence,
        sourceUpdatedAtUnixMicros: updated,
        ...(rng.chance(0.3) ? { metadata: { collapsed: rng.chance(0.5), source: "live" } } : {}),
      });
    };
    const newItemId = () => this.id("itm", ++this.itemCounter);
    const deltas = (method: NotificationName, itemId: string, stream: string, chunks: readonly string[]) => {
      for (const delta of chunks) {
        this.tick(5, 60);
        this.notify(method, { ...base, sequence: this.seq(), item_id: itemId, stream, delta });
      }
    };

    // The user's message.
    {
      const item = { type: "userMessage", id: newItemId(), status: "completed", content: input, ...(capabilities ? { capabilities } : {}) };
      const created = itemStart(item);
      itemDone(item, created);
    }

    const rounds = turnMode === "Chat" ? 1 : rng.int(2, 7);
    let toolCalls = 0;
    let failed = false;
    for (let round = 0; round < rounds && !failed; round++) {
      // Reasoning.
      if (rng.chance(0.6)) {
        const id = newItemId();
        const text = this.paragraph(1, 3);
        // The protocol names no reasoning delta: the item opens empty and completes with its text.
        const created = itemStart({ type: "reasoning", id, status: "in_progress", text: "" });
        this.tick(200, 3000);
        itemDone({ type: "reasoning", id, status: "completed", text }, created);
      }
      // Tool calls of this round.
      const calls = turnMode === "Chat" ? 0 : rng.int(0, 3);
      for (let c = 0; c < calls && !failed; c++) {
        toolCalls++;
        failed = this.toolCall(base, effectiveMode, itemStart, itemDone, deltas, newItemId);
      }
      if (round > 0 && rng.chance(0.3)) {
        this.projectionVersion++;
        this.notify("turn/work/items/changed", {
          threadId,
          turnId,
          projectionVersion: this.projectionVersion,
          sourceHighWatermark: this.sequence,
          projectionUpdatedAtUnixMicros: this.micros(),
          changedWorkItemIds: workItems.slice(-3).map((w) => (w as { workItemId: string }).workItemId),
          ...(rng.chance(0.2) ? { removedWorkItemIds: [] } : {}),
        });
      }
      // Execution window boundary.
      if (turnMode === "Agent" && round < rounds - 1 && rng.chance(0.12)) {
        const reason = rng.pick([
          "max_agent_rounds_per_window",
          "max_tool_calls_per_window",
          "max_wall_clock_ms_per_window",
          "max_provider_tokens_per_window",
          "provider_failure_continuation",
          "runtime_shutdown_continuation",
        ]);
        const observed = {
          agent_rounds: round + 1,
          tool_calls: toolCalls,
          wall_clock_ms: rng.int(1000, 900000),
          provider_tokens: rng.int(1000, 400000),
        };
        this.notify("turn/execution_window/exhausted", {
          ...base,
          sequence: this.seq(),
          window_id: windowId,
          reason,
          observed,
          status: "exhausted",
        });
        const checkpoint = `chk_${rng.hex(16)}`;
        this.notify("turn/execution_window/checkpointed", {
          ...base,
          sequence: this.seq(),
          window_id: windowId,
          checkpoint_id: checkpoint,
          status: "checkpointed",
        });
        const previous = windowId;
        windowId = `win_${turnId}_${++windowIndex}`;
        this.notify("turn/execution_window/continued", {
          ...base,
          sequence: this.seq(),
          previous_window_id: previous,
          window_id: windowId,
          window_index: windowIndex,
          checkpoint_id: checkpoint,
          reason,
        });
        this.notify("turn/execution_window/started", {
          ...base,
          sequence: this.seq(),
          window_id: windowId,
          window_index: windowIndex,
          limits,
          status: "running",
        });
      }
      if (turnMode === "Agent" && rng.chance(0.04)) {
        const budget = rng.pick(["rounds", "tool_calls"]);
        this.notify("turn/tool_loop/budget_exceeded", {
          ...base,
          sequence: this.seq(),
          budget,
          limit: budget === "rounds" ? 40 : 120,
          observed: budget === "rounds" ? 41 : 121,
        });
      }
    }

    // The answer: the most frequent traffic of all, one small delta at a time.
    if (!failed) {
      const id = newItemId();
      const text = this.paragraph(6, 18);
      const created = itemStart({ type: "agentMessage", id, status: "in_progress", text: "", partial: true });
      deltas("item/agent_message/delta", id, "agent_message", this.fragments(text, 3, 14));
      const done: Record<string, unknown> = { type: "agentMessage", id, status: "completed", text };
      if (rng.chance(0.4))
        done.markdown_ast = { type: "root", children: [{ type: "paragraph", children: [{ type: "text", value: text.slice(0, 80) }] }] };
      itemDone(done, created);
      if (rng.chance(0.2)) this.notify("item/updated", { ...base, sequence: this.seq(), item_id: id, item: { ...done, partial: false } });
    }

    // The end of the turn.
    this.tick(10, 300);
    const usage = { input_tokens: rng.int(500, 120000), output_tokens: rng.int(50, 8000), total_tokens: 0 };
    usage.total_tokens = usage.input_tokens + usage.output_tokens;
    let blockState = "completed";
    if (failed) {
      const error = { kind: "tool_error", message: "the tool failed after every retry", retryable: true };
      this.notify("turn/failed", { ...base, sequence: this.seq(), turn: turnModel("Failed", { error, completed_at: this.iso() }), error });
      blockState = "failed";
    } else if (turnMode === "Agent" && rng.chance(0.05)) {
      const recovery = `rec_${this.pad(++this.miscCounter)}`;
      const totals = { agent_rounds: 80, tool_calls: toolCalls, wall_clock_ms: 1800000, provider_tokens: 800000 };
      this.notify("turn/execution_window/blocked", {
        ...base,
        sequence: this.seq(),
        window_id: windowId,
        reason: "max_wall_clock_ms_per_window",
        totals,
        recovery_job_id: recovery,
      });
      this.notify("turn/blocked", {
        ...base,
        sequence: this.seq(),
        turn: turnModel("Blocked", { blocked: { reason: "execution window budget exhausted", recovery_job_id: recovery } }),
        reason: "execution window budget exhausted",
        recovery_job_id: recovery,
      });
      const id = this.request("turn/resume", { ...base, recovery_job_id: recovery });
      this.response("turn/resume", id, { turn: turnModel("InProgress"), recovery_job_id: recovery });
      this.notify("turn/completed", {
        ...base,
        sequence: this.seq(),
        turn: turnModel("Completed", { completed_at: this.iso(), usage }),
        usage,
      });
    } else {
      this.notify("turn/completed", {
        ...base,
        sequence: this.seq(),
        turn: turnModel("Completed", { completed_at: this.iso(), usage }),
        usage,
      });
    }
    const startedMicros = createdAt ? Date.parse(createdAt) * 1000 : 0;
    const work = {
      blockId: `blk_${turnId}`,
      turnId,
      presentation: {
        title: (rng.pick(PROMPTS) as string).slice(0, 48),
        ...(rng.chance(0.5) ? { subtitle: `${workItems.length} steps` } : {}),
        collapsed: rng.chance(0.5),
      },
      state: blockState,
      counts: { total: workItems.length, inProgress: 0, completed: workItems.length - (failed ? 1 : 0), failed: failed ? 1 : 0 },
      cursors: {
        oldest: workItems.length ? "00000001" : null,
        newest: workItems.length ? String(workItems.length).padStart(8, "0") : null,
      },
      startedAtUnixMicros: startedMicros,
      endedAtUnixMicros: this.clockMs * 1000,
      elapsedMs: this.clockMs - Date.parse(createdAt),
    };
    this.projectionVersion++;
    this.notify("turn/work/state/changed", {
      threadId,
      turnId,
      projectionVersion: this.projectionVersion,
      sourceHighWatermark: this.sequence,
      projectionUpdatedAtUnixMicros: this.micros(),
      work,
    });
    this.notify("thread/timeline/blocks/changed", { threadId, changedBlockIds: [`blk_${turnId}`] });

    // The client expands the turn's work: one or more pages of TurnWorkItem rows.
    const pageSize = rng.pick([4, 6, 8, 12]);
    let end = workItems.length;
    let anchor: object = { kind: "newest" };
    let pages = 0;
    while (end > 0 && pages < 3) {
      const startIdx = Math.max(0, end - pageSize);
      const id = this.request("turn/work/page", { threadId, turnId, anchor, limit: pageSize });
      this.tick(5, 40);
      this.response("turn/work/page", id, {
        workspaceId: this.workspaceId,
        threadId,
        turnId,
        projectionVersion: this.projectionVersion,
        sourceHighWatermark: this.sequence,
        projectionUpdatedAtUnixMicros: this.micros(),
        work,
        items: workItems.slice(startIdx, end),
        page: {
          beforeCursor: startIdx > 0 ? String(startIdx).padStart(8, "0") : null,
          afterCursor: end < workItems.length ? String(end + 1).padStart(8, "0") : null,
          hasMoreBefore: startIdx > 0,
          hasMoreAfter: end < workItems.length,
        },
      });
      anchor = { kind: "before", cursor: String(startIdx).padStart(8, "0") };
      end = startIdx;
      pages++;
    }
    if (rng.chance(0.3) && workItems.length) {
      const picked = this.rng.some(workItems, 1, 3) as { workItemId: string }[];
      const id = this.request("turn/work/items/get", { threadId, turnId, workItemIds: picked.map((w) => w.workItemId) });
      this.response("turn/work/items/get", id, {
        workspaceId: this.workspaceId,
        threadId,
        turnId,
        projectionVersion: this.projectionVersion,
        sourceHighWatermark: this.sequence,
        projectionUpdatedAtUnixMicros: this.micros(),
        items: picked,
        removedWorkItemIds: [],
      });
    }
    if (rng.chance(0.15)) {
      const id = this.request("turn/items", { ...base, after_sequence: 0, limit: 50 });
      const events = Array.from({ length: rng.int(1, 4) }, (_, i) => ({
        sequence: i + 1,
        method: "item/completed",
        params: { item_id: this.id("itm", this.itemCounter - i) },
        recorded_at: this.iso(),
      }));
      this.response("turn/items", id, {
        thread_id: threadId,
        workspace_id: this.workspaceId,
        turn_id: turnId,
        events,
        last_sequence: this.sequence,
      });
    }
    if (rng.chance(0.1)) {
      const id = this.request("turn/get", base);
      this.response("turn/get", id, { turn: turnModel("Completed", { completed_at: this.iso(), usage }) });
    }

    // Delegation routes, now and then.
    if (rng.chance(0.35)) this.route();
  }

  /** One tool call with its stream; returns true when it failed for good (the turn fails). */
  private toolCall(
    base: { thread_id: string; turn_id: string },
    mode: PermissionMode,
    itemStart: (item: Record<string, unknown>) => number,
    itemDone: (item: Record<string, unknown>, created: number) => void,
    deltas: (method: NotificationName, itemId: string, stream: string, chunks: readonly string[]) => void,
    newItemId: () => string,
  ): boolean {
    const rng = this.rng;
    const id = newItemId();
    const toolCallId = `call_${rng.hex(24)}`;
    const kind = rng.pick([
      "commandExecution",
      "commandExecution",
      "fileChange",
      "fileChange",
      "webSearch",
      "webFetch",
      "download",
      "dynamicToolCall",
      "dynamicToolCall",
      "task",
      "systemEvent",
    ]);

    // Permission prompt first, where the mode asks.
    const action =
      kind === "commandExecution"
        ? "shell_command"
        : kind === "fileChange"
          ? "file_write"
          : kind === "webSearch" || kind === "webFetch" || kind === "download"
            ? "network"
            : kind === "dynamicToolCall"
              ? "mcp_write_or_unknown"
              : kind === "task"
                ? "task_subagent"
                : undefined;
    const asks = action !== undefined && mode !== "full_access" && !(mode === "auto_accept_edits" && action === "file_write");
    let declined = false;
    if (asks && rng.chance(0.6)) {
      const requestId = this.id("perm", ++this.permCounter);
      const scopeHash = `sha256:${rng.hex(32)}`;
      const toolName =
        kind === "commandExecution"
          ? "shell"
          : kind === "fileChange"
            ? "apply_patch"
            : kind === "dynamicToolCall"
              ? rng.pick(["resend__send_email", "github__create_issue"])
              : kind === "task"
                ? "task"
                : "web_fetch";
      this.notify("turn/permission/audit", {
        ...base,
        sequence: this.seq(),
        audit_id: `aud_${rng.hex(12)}`,
        kind: "request_opened",
        request_id: requestId,
        tool_name: toolName,
        action,
        behavior: "ask",
        decided_by: "policy",
        scope_hash: scopeHash,
        recorded_at: this.iso(),
      });
      this.notify("turn/permission/request/opened", {
        ...base,
        sequence: this.seq(),
        request: {
          request_id: requestId,
          workspace_id: this.workspaceId,
          thread_id: base.thread_id,
          turn_id: base.turn_id,
          ...(rng.chance(0.3) ? { visible_thread_ids: [base.thread_id] } : {}),
          tool_name: toolName,
          action,
          scope_hash: scopeHash,
          reason: `${mode} mode asks before ${action!.replace(/_/g, " ")}`,
          ...(rng.chance(0.7) ? { summary: kind === "commandExecution" ? `Run \`${rng.pick(COMMANDS)}\`` : `Use ${toolName}` } : {}),
          details:
            kind === "commandExecution"
              ? { command: rng.pick(COMMANDS), cwd: "/Users/alex/Code/pioneer" }
              : kind === "fileChange"
                ? { path: rng.pick(PATHS), change_kind: "modify" }
                : { target: rng.pick(DOMAINS) },
          allowed_scopes: ["allow_once", "allow_for_turn"],
          ...(kind === "fileChange" && rng.chance(0.2) ? { outside_paths: ["/etc/hosts"], sandbox_escape: true } : {}),
          item_id: id,
          created_at: this.iso(),
          ...(rng.chance(0.5) ? { expires_at: new Date(this.clockMs + 300000).toISOString(), resolve_token: `rt_${rng.hex(20)}` } : {}),
        },
      });
      this.tick(800, 20000);
      const resolution = rng.pick(["allow_once", "allow_once", "allow_for_turn", "allow_for_turn", "deny"] as const);
      const rid = this.request("turn/permission/request/respond", {
        request_id: requestId,
        resolution,
        ...(rng.chance(0.5) ? { resolve_token: `rt_${rng.hex(20)}` } : {}),
      });
      this.response("turn/permission/request/respond", rid, {
        request_id: requestId,
        thread_id: base.thread_id,
        turn_id: base.turn_id,
        resolution,
        resolved_at: this.iso(),
      });
      this.notify("turn/permission/request/resolved", {
        ...base,
        sequence: this.seq(),
        request_id: requestId,
        resolution,
        resolved_at: this.iso(),
        ...(rng.chance(0.5) ? { scope_hash: scopeHash } : {}),
      });
      this.notify("turn/permission/audit", {
        ...base,
        sequence: this.seq(),
        audit_id: `aud_${rng.hex(12)}`,
        kind: "request_resolved",
        request_id: requestId,
        tool_name: toolName,
        action,
        resolution,
        decided_by: "resolution",
        recorded_at: this.iso(),
      });
      declined = resolution === "deny";
    } else if (action !== undefined && rng.chance(0.1)) {
      this.notify("turn/permission/audit", {
        ...base,
        sequence: this.seq(),
        audit_id: `aud_${rng.hex(12)}`,
        kind: "decision_allowed",
        tool_name: "shell",
        action,
        behavior: "allow",
        decided_by: rng.pick(["policy", "turn_grant", "config"]),
        recorded_at: this.iso(),
        ...(rng.chance(0.3) ? { profile: this.profileSnapshot(mode, "composer") } : {}),
      });
    }

    const args = (extra: object) => ({ ...extra });
    const common = (status: string) => ({ id, status, tool_call_id: toolCallId });
    const finalStatus = declined ? "declined" : "completed";
    const outcome = declined ? "declined" : "success";

    switch (kind) {
      case "commandExecution": {
        const command = rng.pick(COMMANDS);
        const cwd = "/Users/alex/Code/pioneer";
        const created = itemStart({
          type: "commandExecution",
          ...common("in_progress"),
          command,
          cwd,
          arguments: args({ command, cwd, timeout_ms: 120000 }),
        });
        if (declined) {
          itemDone(
            {
              type: "commandExecution",
              ...common(finalStatus),
              command,
              cwd,
              arguments: args({ command, cwd }),
              outcome,
              error: { message: "the user declined the command", retryable: false },
            },
            created,
          );
          return false;
        }
        this.maybeRecovery(base, id);
        const lines: string[] = [];
        const nLines = rng.int(2, 40);
        for (let i = 0; i < nLines; i++) lines.push(`${rng.pick(["ok", "PASS", "info", "  ✓", "warn", ">"])} ${this.words(2, 10)}\n`);
        const stdout = lines.join("");
        for (const chunk of this.fragments(stdout, 40, 160)) {
          this.tick(2, 30);
          const stream = rng.chance(0.9) ? "stdout" : "stderr";
          this.notify("item/command_execution/output_delta", { ...base, sequence: this.seq(), item_id: id, stream, delta: chunk });
        }
        const exit = rng.chance(0.85) ? 0 : 1;
        itemDone(
          {
            type: "commandExecution",
            ...common(exit === 0 ? "completed" : "failed"),
            command,
            cwd,
            stdout: stdout.slice(0, 4000),
            stderr: exit ? "error: 2 tests failed\n" : "",
            exit_code: exit,
            duration_ms: rng.int(30, 90000),
            timed_out: false,
            arguments: args({ command, cwd }),
            output_policy: this.outputPolicy(stdout.length),
            outcome: exit === 0 ? "success" : "error",
            ...(exit ? { error: { message: "exit code 1", retryable: false } } : {}),
          },
          created,
        );
        return false;
      }
      case "fileChange": {
        const path = rng.pick(PATHS);
        const change_kind = rng.pick(["add", "modify", "modify", "delete"]);
        const created = itemStart({
          type: "fileChange",
          ...common("in_progress"),
          path,
          change_kind,
          arguments: args({ path, patch_format: "unified" }),
        });
        const diff = `--- a/${path}\n+++ b/${path}\n@@ -${rng.int(1, 200)},6 +${rng.int(1, 200)},8 @@\n${Array.from({ length: rng.int(3, 12) }, () => `${rng.pick(["+", "-", " "])}  ${this.words(2, 8)}`).join("\n")}\n`;
        if (!declined) deltas("item/file_change/output_delta", id, "file_change", this.fragments(diff, 60, 200));
        itemDone(
          {
            type: "fileChange",
            ...common(finalStatus),
            path,
            change_kind,
            ...(declined ? {} : { diff, output: "patch applied" }),
            arguments: args({ path, patch_format: "unified" }),
            output_policy: this.outputPolicy(diff.length),
            outcome,
          },
          created,
        );
        return false;
      }
      case "webSearch": {
        const query = this.words(2, 6);
        const created = itemStart({ type: "webSearch", ...common("in_progress"), query, arguments: args({ query, max_results: 5 }) });
        const results = declined
          ? []
          : Array.from({ length: rng.int(1, 5) }, () => ({
              title: this.words(3, 8),
              url: `https://${rng.pick(DOMAINS)}/${rng.hex(6)}`,
              snippet: this.sentence(),
            }));
        itemDone(
          {
            type: "webSearch",
            ...common(finalStatus),
            query,
            results,
            arguments: args({ query, max_results: 5 }),
            output_policy: this.outputPolicy(800),
            outcome,
          },
          created,
        );
        return false;
      }
      case "webFetch": {
        const url = `https://${rng.pick(DOMAINS)}/docs/${rng.hex(6)}`;
        const created = itemStart({ type: "webFetch", ...common("in_progress"), url, arguments: args({ url }) });
        const content = this.paragraph(2, 6);
        itemDone(
          {
            type: "webFetch",
            ...common(finalStatus),
            url,
            ...(declined
              ? {}
              : { status_code: rng.pick([200, 200, 200, 301, 404]), content_type: "text/html", bytes: content.length, content }),
            arguments: args({ url }),
            output_policy: this.outputPolicy(content.length),
            outcome,
          },
          created,
        );
        return false;
      }
      case "download": {
        const url = `https://${rng.pick(DOMAINS)}/files/${rng.hex(6)}.tar.gz`;
        const created = itemStart({
          type: "download",
          ...common("in_progress"),
          url,
          arguments: args({ url, destination: "/tmp/pioneer/turn" }),
        });
        itemDone(
          {
            type: "download",
            ...common(finalStatus),
            url,
            ...(declined ? {} : { path: `/tmp/pioneer/turn/${rng.hex(6)}.tar.gz`, bytes: rng.int(1000, 50_000_000) }),
            arguments: args({ url, destination: "/tmp/pioneer/turn" }),
            outcome,
          },
          created,
        );
        return false;
      }
      case "dynamicToolCall": {
        const server = rng.pick(MCP_SERVERS);
        const tool = `${server}__${rng.pick(MCP_TOOLS)}`;
        const toolArgs = { to: "team@example.com", subject: this.words(3, 6), body: this.sentence() };
        const created = itemStart({
          type: "dynamicToolCall",
          ...common("in_progress"),
          tool_name: tool,
          server_name: server,
          arguments: toolArgs,
          recovery_policy: { max_attempts: 3, backoff_ms: 500 },
        });
        if (!declined) {
          for (let i = 0; i < rng.int(1, 5); i++) {
            this.tick(50, 600);
            this.notify("item/tool/progress", {
              ...base,
              sequence: this.seq(),
              item_id: id,
              stream: "tool_progress",
              delta: `${rng.pick(["connecting", "sending", "waiting for reply", "parsing result"])}…`,
            });
          }
          // A recoverable tool failure now and then.
          if (rng.chance(0.15)) {
            const attempts = rng.int(1, 3);
            for (let a = 1; a <= attempts; a++)
              this.notify("item/tool/retry_scheduled", {
                ...base,
                sequence: this.seq(),
                item_id: id,
                tool_name: tool,
                attempt: a,
                max_attempts: 3,
                delay_ms: 500 * a,
                error: "HTTP 503 from the MCP server",
              });
            if (rng.chance(0.12)) {
              this.notify("item/tool/retry_exhausted", {
                ...base,
                sequence: this.seq(),
                item_id: id,
                tool_name: tool,
                attempts: 3,
                error: "HTTP 503 from the MCP server",
              });
              itemDone(
                {
                  type: "dynamicToolCall",
                  ...common("failed"),
                  tool_name: tool,
                  server_name: server,
                  arguments: toolArgs,
                  error: { message: "HTTP 503 from the MCP server", retryable: true },
                  outcome: "error",
                  recovery: { attempts: 3, exhausted: true },
                },
                created,
              );
              return true;
            }
            this.notify("item/tool/retry_resolved", {
              ...base,
              sequence: this.seq(),
              item_id: id,
              tool_name: tool,
              attempts,
              outcome: "succeeded",
            });
          }
        }
        itemDone(
          {
            type: "dynamicToolCall",
            ...common(finalStatus),
            tool_name: tool,
            server_name: server,
            ...(declined ? {} : { progress: "done", output: JSON.stringify({ id: rng.hex(10), ok: true }) }),
            arguments: toolArgs,
            output_policy: this.outputPolicy(120),
            outcome,
          },
          created,
        );
        return false;
      }
      case "task": {
        const prompt = this.sentence();
        const childThread = this.id("thr", this.threadCounter + 1000);
        const created = itemStart({
          type: "task",
          id,
          status: "in_progress",
          prompt,
          tool_call_id: toolCallId,
          actor: { kind: "agent", identity_id: this.id("idn", 7), presentation: this.presentation() },
        });
        itemDone(
          {
            type: "task",
            id,
            status: finalStatus,
            prompt,
            tool_call_id: toolCallId,
            ...(declined
              ? { error: { message: "the user declined the subagent" } }
              : {
                  child_thread_id: childThread,
                  child_turn_id: this.id("trn", this.turnCounter + 1000),
                  route_id: `rte_${rng.hex(12)}`,
                  result: this.paragraph(1, 3),
                }),
            actor: {
              kind: "agent",
              identity_id: this.id("idn", 7),
              execution_id: this.id("exe", this.turnCounter),
              presentation: this.presentation(),
            },
          },
          created,
        );
        return false;
      }
      default: {
        const level = rng.pick(["info", "info", "warning", "error"]);
        const item = {
          type: "systemEvent",
          id,
          status: "completed",
          level,
          message: this.sentence(),
          ...(rng.chance(0.5) ? { code: rng.pick(["rate_limited", "context_trimmed", "model_fallback"]) } : {}),
        };
        const created = itemStart(item);
        itemDone(item, created);
        return false;
      }
    }
  }

  /** Timeouts, recovery jobs and retries around a tool item. */
  private maybeRecovery(base: { thread_id: string; turn_id: string }, itemId: string): void {
    const rng = this.rng;
    if (!rng.chance(0.12)) return;
    const job = `rec_${this.pad(++this.miscCounter)}`;
    this.notify("item/timeout_detected", {
      ...base,
      sequence: this.seq(),
      item_id: itemId,
      deadline_ms: 120000,
      elapsed_ms: rng.int(120000, 130000),
      attempt: 1,
    });
    this.notify("item/recovery_opened", {
      ...base,
      sequence: this.seq(),
      item_id: itemId,
      recovery_job_id: job,
      reason: rng.pick(["timeout", "provider_failure", "tool_failure", "runtime_shutdown", "execution_window_exhausted"]),
      ...(rng.chance(0.2) ? { exhaustion_reason: "max_wall_clock_ms_per_window" } : {}),
    });
    const attempts = rng.int(1, 3);
    for (let a = 1; a <= attempts; a++) {
      this.notify("item/recovery_attached", { ...base, sequence: this.seq(), item_id: itemId, recovery_job_id: job, attempt: a });
      this.notify("item/retry_scheduled", {
        ...base,
        sequence: this.seq(),
        item_id: itemId,
        attempt: a,
        max_attempts: 3,
        delay_ms: 1000 * a,
        next_attempt_at: new Date(this.clockMs + 1000 * a).toISOString(),
        error: "deadline exceeded",
      });
      this.tick(1000, 3000);
      this.notify("item/retry_attempt_started", { ...base, sequence: this.seq(), item_id: itemId, attempt: a });
    }
    if (rng.chance(0.85))
      this.notify("item/recovery_succeeded", {
        ...base,
        sequence: this.seq(),
        item_id: itemId,
        attempt: attempts,
        ...(rng.chance(0.7) ? { recovery_job_id: job } : {}),
      });
    else
      this.notify("item/recovery_exhausted", {
        ...base,
        sequence: this.seq(),
        item_id: itemId,
        attempts,
        error: "deadline exceeded on every attempt",
        recovery_job_id: rng.chance(0.5) ? job : null,
      });
  }

  /** agent/route/create and its projection; sometimes list and revoke. */
  private route(): void {
    const rng = this.rng;
    const routeNo = ++this.routeCounter;
    const routeId = `rte_${this.pad(routeNo)}`;
    const kind = rng.pick(["execution_bound", "identity_bound"]);
    const actions = rng.some(["send_message", "start_agent", "create_task", "schedule_task", "review_task_result", "deliver_result"], 1, 4);
    const src = {
      source_execution_id: this.id("exe", this.turnCounter),
      source_capsule_id: `cap_${rng.hex(12)}`,
      source_thread_id: this.threadId,
      source_workspace_id: this.workspaceId,
      source_gateway_id: "gw_local",
    };
    const dest = {
      destination_thread_id: this.id("thr", rng.int(1, this.threadCounter + 5)),
      destination_workspace_id: this.workspaceId,
      destination_gateway_id: rng.pick(["gw_local", "gw_remote_eu"]),
    };
    const disclosureRequest = rng.chance(0.7)
      ? {
          text: true,
          artifacts: rng.chance(0.5),
          context: rng.chance(0.3),
          userInput: false,
          resultReturn: rng.pick(["none", "summary_only", "full_result"]),
        }
      : undefined;
    const expires = rng.chance(0.6) ? new Date(this.clockMs + 3_600_000).toISOString() : undefined;
    const params = {
      kind,
      ...src,
      ...(kind === "execution_bound"
        ? { destination_execution_id: this.id("exe", this.turnCounter + 1), destination_capsule_id: `cap_${rng.hex(12)}` }
        : {}),
      ...dest,
      ...(kind === "identity_bound"
        ? { destination_identity_id: this.id("idn", rng.int(1, 40)), destination_execution_profile: "default" }
        : {}),
      allowed_actions: actions,
      ...(disclosureRequest ? { disclosure: disclosureRequest } : {}),
      source_policy_generation: rng.int(1, 9),
      destination_policy_generation: rng.int(1, 9),
      hop_count: 0,
      max_hops: rng.int(1, 4),
      ...(expires ? { expires_at: expires } : {}),
      ...(rng.chance(0.3) ? { return_route_id: `rte_${this.pad(Math.max(1, routeNo - 1))}` } : {}),
      idempotency_key: `idem_${rng.hex(16)}`,
    };
    const id = this.request("agent/route/create", params);
    this.tick(5, 50);
    const projection = (status: string, generation: number) => ({
      route_id: routeId,
      kind,
      status,
      allowed_actions: actions,
      disclosure: {
        text: disclosureRequest?.text ?? true,
        artifacts: disclosureRequest?.artifacts ?? false,
        context: disclosureRequest?.context ?? false,
        userInput: false,
        resultReturn: disclosureRequest?.resultReturn ?? "summary_only",
      },
      generation,
      source_policy_generation: params.source_policy_generation,
      destination_policy_generation: params.destination_policy_generation,
      hop_count: 0,
      max_hops: params.max_hops,
      grant_fingerprint: `sha256:${rng.hex(64)}`,
      expires_at: expires ?? null,
      return_route_id: (params as { return_route_id?: string }).return_route_id ?? null,
      ...src,
      destination_execution_id: (params as { destination_execution_id?: string }).destination_execution_id ?? null,
      destination_capsule_id: (params as { destination_capsule_id?: string }).destination_capsule_id ?? null,
      ...dest,
      ...(kind === "identity_bound"
        ? {
            destination_identity_id: (params as { destination_identity_id?: string }).destination_identity_id!,
            destination_execution_profile: "default",
          }
        : {}),
      created_at: this.iso(),
      updated_at: this.iso(),
      idempotency_key: params.idempotency_key,
    });
    const created = projection(rng.chance(0.8) ? "active" : "prepared", 1);
    this.response("agent/route/create", id, created);
    if (rng.chance(0.4)) {
      const lid = this.request("agent/route/list", { source_execution_id: src.source_execution_id, limit: 20 });
      this.response("agent/route/list", lid, {
        routes: [created, projection("expired", 2)],
        next_cursor: rng.chance(0.5) ? `cur_${rng.hex(8)}` : null,
      });
    }
    if (rng.chance(0.3)) {
      const rid = this.request("agent/route/revoke", {
        route_id: routeId,
        expected_generation: 1,
        reason: "task finished",
        idempotency_key: `idem_${rng.hex(16)}`,
      });
      this.tick(5, 50);
      this.response("agent/route/revoke", rid, projection("revoked", 2));
    }
  }
}

// ---------------------------------------------------------------------------------------

/** Builds the corpus and checks every message in strict mode; throws on the first invalid one. */
export function buildCorpus(options: CorpusOptions = {}): CorpusMessage[] {
  const seed = options.seed ?? 0x7e57_5eed;
  const minMessages = options.minMessages ?? 12_000;
  const sim = new Simulator(new Rng(seed));
  while (sim.out.length < minMessages) sim.runThread();
  assertCorpusValid(sim.out);
  return sim.out;
}

/** Every message is a well-formed JSON-RPC frame whose payload is valid in strict mode. */
export function assertCorpusValid(corpus: readonly CorpusMessage[]): void {
  const problems: string[] = [];
  corpus.forEach((m, i) => {
    const parsed = JSON.parse(m.text) as { params?: unknown; result?: unknown };
    const classified = classify(parsed);
    if (classified.kind !== m.kind) {
      problems.push(
        `#${i} ${m.method}: classified as ${classified.kind}${classified.kind === "invalid" ? ` (${classified.reason})` : ""}, expected ${m.kind}`,
      );
      return;
    }
    const result = validate(m.type, payloadOf(parsed, m.kind), "strict");
    if (!result.ok)
      problems.push(
        `#${i} ${m.kind} ${m.method} (${m.type}): ${result.errors.map((e) => `${e.pointer || "(value)"}: ${e.message}`).join("; ")}`,
      );
  });
  if (problems.length) {
    throw new Error(
      `bench corpus: ${problems.length} of ${corpus.length} messages are not valid in strict mode:\n  ${problems.slice(0, 20).join("\n  ")}`,
    );
  }
}

/** Counts, bytes and the mix by method, for the report. */
export function describeCorpus(corpus: readonly CorpusMessage[]): { messages: number; bytes: number; byMethod: [string, number][] } {
  const byMethod = new Map<string, number>();
  let bytes = 0;
  for (const m of corpus) {
    bytes += Buffer.byteLength(m.text);
    const key = `${m.kind === "response" ? "⇠ " : m.kind === "request" ? "→ " : "⇢ "}${m.method}`;
    byMethod.set(key, (byMethod.get(key) ?? 0) + 1);
  }
  return { messages: corpus.length, bytes, byMethod: [...byMethod].sort((a, b) => b[1] - a[1]) };
}

if (isMain(import.meta.url)) {
  const started = performance.now();
  const corpus = buildCorpus();
  const info = describeCorpus(corpus);
  console.log(
    `corpus: ${info.messages} messages, ${(info.bytes / 1024).toFixed(0)} KiB, built and checked in ${(performance.now() - started).toFixed(0)} ms`,
  );
  for (const [method, n] of info.byMethod) console.log(`  ${String(n).padStart(6)}  ${method}`);
}
