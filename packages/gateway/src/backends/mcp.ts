/**
 * MCP servers as tool sources, through the official SDK's client: the servers the gateway
 * configuration names are connected when a turn first selects one (stdio command or
 * Streamable HTTP URL) and the connection is kept for later turns. A selected server's
 * tools, or one selected tool, become dynamic provider tools of the turn: their calls run
 * as dynamicToolCall items, with the permission kind the tool's annotations give
 * (readOnlyHint: true → mcp_read, anything else → mcp_write_or_unknown).
 *
 * Nothing a server does crashes a turn: a server that does not start is a rejected
 * capability (dependency_missing), and a call that fails, times out or names a tool the
 * server no longer has is a failed item whose text the model receives.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult, Tool as McpToolDescription } from "@modelcontextprotocol/sdk/types.js";
import type { PermissionActionKind } from "@turnspec/protocol/types";
import type { McpServerConfig } from "../config.js";
import { defineTool } from "../tools/arguments.js";
import type { Tool, ToolContext, ToolResult } from "../tools/tool.js";
import { importOptional } from "../optional.js";
import { LazyChildren } from "./children.js";

/** A tool one MCP server offers, as its tools/list describes it. */
export type McpToolInfo = McpToolDescription;

/** A server that could not be reached or did not list its tools. */
export class McpServerUnavailable extends Error {
  constructor(
    readonly server: string,
    message: string,
  ) {
    super(message);
    this.name = "McpServerUnavailable";
  }
}

/** What the model sees as a tool's name: `mcp__SERVER__TOOL`, in the characters and length providers accept. */
export function mcpToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
}

/**
 * The permission kind of a call to `tool`: mcp_read only for a tool a trusted server
 * declares read-only. A server's annotations are its own words about itself; from a server
 * the configuration does not mark trusted, a readOnlyHint on a tool that writes would let it
 * run without the approval the profile asks for writes, so it is not believed.
 */
export function mcpActionOf(tool: Pick<McpToolInfo, "annotations">, server: Pick<McpServerConfig, "trusted">): PermissionActionKind {
  return server.trusted && tool.annotations?.readOnlyHint === true ? "mcp_read" : "mcp_write_or_unknown";
}

interface Connection {
  readonly client: Client;
  /** The last lines the server wrote to stderr (stdio servers), for error messages. */
  readonly stderr: string[];
}

/** The configured MCP servers, each connected on first use and kept. */
export class McpServers {
  private readonly connections = new LazyChildren<Connection>();

  constructor(
    private readonly servers: ReadonlyMap<string, McpServerConfig>,
    private readonly log: (message: string) => void = () => undefined,
  ) {}

  config(name: string): McpServerConfig | undefined {
    return this.servers.get(name);
  }

  names(): string[] {
    return [...this.servers.keys()];
  }

  /**
   * The tools `name` offers now (tools/list, every page). Throws McpServerUnavailable when
   * the server does not start or answer within its start-up timeout; the next call tries
   * again with a new connection.
   */
  async listTools(name: string): Promise<McpToolInfo[]> {
    const server = this.servers.get(name);
    if (!server) throw new McpServerUnavailable(name, `no MCP server named ${name} is configured`);
    const connection = await this.connect(server);
    const tools: McpToolInfo[] = [];
    try {
      let cursor: string | undefined;
      do {
        const page = await connection.client.listTools(cursor === undefined ? {} : { cursor }, { timeout: server.startupTimeoutMs });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
    } catch (error) {
      this.drop(name);
      throw new McpServerUnavailable(name, `MCP server ${name} did not list its tools: ${messageOf(error)}${stderrTail(connection)}`);
    }
    return tools;
  }

  /** Calls one tool; every failure is a result for the model, never a throw. */
  async callTool(name: string, tool: string, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
    const server = this.servers.get(name)!;
    let connection: Connection;
    try {
      connection = await this.connect(server);
    } catch (error) {
      const message = messageOf(error);
      return { ok: false, content: message, item: { error: { message } } };
    }
    const { ErrorCode, McpError } = await importOptional<typeof import("@modelcontextprotocol/sdk/types.js")>(
      "@modelcontextprotocol/sdk",
      "@modelcontextprotocol/sdk/types.js",
      "an MCP tool call",
    );
    const started = Date.now();
    // The completed item carries the progress it streamed.
    let progressText = "";
    const withProgress = (item: Record<string, unknown>) => (progressText ? { progress: progressText, ...item } : item);
    try {
      const result = (await connection.client.callTool({ name: tool, arguments: args }, undefined, {
        signal: ctx.signal,
        timeout: server.toolTimeoutMs,
        onprogress: (progress) => {
          const total = progress.total === undefined ? "" : `/${progress.total}`;
          const note = progress.message ? ` ${progress.message}` : "";
          const line = `${progress.progress}${total}${note}\n`;
          progressText += line;
          ctx.emit("tool_progress", line);
        },
      })) as CallToolResult;
      const content = resultText(result);
      if (result.isError === true)
        return {
          ok: false,
          content: content || `${tool} failed`,
          item: withProgress({ output: content, error: { message: content || `${tool} failed` } }),
        };
      return { ok: true, content, item: withProgress({ output: content }) };
    } catch (error) {
      if (ctx.signal.aborted) return { ok: false, content: `${tool} was cancelled with the turn`, item: withProgress({}) };
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        const message = `${tool} on MCP server ${name} did not answer within ${server.toolTimeoutMs} ms`;
        return {
          ok: false,
          content: message,
          item: withProgress({ error: { message } }),
          timeout: { deadline_ms: server.toolTimeoutMs, elapsed_ms: Date.now() - started },
        };
      }
      if (error instanceof McpError && (error.code === ErrorCode.ConnectionClosed || error.message.includes("Not connected")))
        this.drop(name);
      const message = `${tool} on MCP server ${name} failed: ${messageOf(error)}${stderrTail(connection)}`;
      return { ok: false, content: message, item: withProgress({ error: { message } }) };
    }
  }

  /** The dynamic tool a turn offers for one MCP tool. */
  toolFor(server: string, info: McpToolInfo): Tool {
    const name = mcpToolName(server, info.name);
    const action = mcpActionOf(info, this.servers.get(server)!);
    const { $schema: _draft, ...parameters } = info.inputSchema as Record<string, unknown>;
    return defineTool({
      spec: {
        name,
        description: [info.title, info.description].filter(Boolean).join(": ") || `${info.name} (MCP server ${server})`,
        parameters: { type: "object", ...parameters },
      },
      itemType: "dynamicToolCall",
      permissionAction: action,
      describe: () => ({ server_name: server }),
      run: (args, ctx) => this.callTool(server, info.name, args, ctx),
    });
  }

  /** Closes every connection (stdio servers are stopped). */
  async close(): Promise<void> {
    await this.connections.close((c) => c.client.close());
  }

  private drop(name: string): void {
    void this.connections
      .forget(name)
      ?.then((c) => c.client.close())
      .catch(() => undefined);
  }

  /** The server's connection, opened on first use; a failed start is not kept: the next turn that selects the server tries again. */
  private connect(server: McpServerConfig): Promise<Connection> {
    return this.connections.get(server.name, () => this.open(server));
  }

  private async open(server: McpServerConfig): Promise<Connection> {
    // The SDK is loaded only by a gateway that uses an MCP server.
    const what = `the MCP server ${server.name}`;
    const [{ Client }, stdio, http] = await Promise.all([
      importOptional<typeof import("@modelcontextprotocol/sdk/client/index.js")>(
        "@modelcontextprotocol/sdk",
        "@modelcontextprotocol/sdk/client/index.js",
        what,
      ),
      importOptional<typeof import("@modelcontextprotocol/sdk/client/stdio.js")>(
        "@modelcontextprotocol/sdk",
        "@modelcontextprotocol/sdk/client/stdio.js",
        what,
      ),
      importOptional<typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js")>(
        "@modelcontextprotocol/sdk",
        "@modelcontextprotocol/sdk/client/streamableHttp.js",
        what,
      ),
    ]);
    const client = new Client({ name: "turnspec-gateway", version: "0.1.0" });
    const stderr: string[] = [];
    const transport =
      server.transport === "stdio"
        ? new stdio.StdioClientTransport({
            command: server.command,
            args: [...server.args],
            env: { ...stdio.getDefaultEnvironment(), ...server.env },
            ...(server.cwd ? { cwd: server.cwd } : {}),
            stderr: "pipe",
          })
        : new http.StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { ...server.headers } } });
    if (transport instanceof stdio.StdioClientTransport) {
      transport.stderr?.on("data", (chunk: Buffer) => {
        for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) {
          stderr.push(line);
          if (stderr.length > 5) stderr.shift();
          this.log(`mcp ${server.name}: ${line}`);
        }
      });
    }
    client.onclose = () => {
      if (this.connections.has(server.name)) this.log(`mcp ${server.name}: the connection closed`);
      this.connections.forget(server.name);
    };
    const where = server.transport === "stdio" ? `${server.command} ${server.args.join(" ")}`.trim() : server.url;
    try {
      await client.connect(transport, { timeout: server.startupTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw new McpServerUnavailable(
        server.name,
        `MCP server ${server.name} (${where}) did not start: ${messageOf(error)}${stderrTail({ stderr })}`,
      );
    }
    return { client, stderr };
  }
}

/** The text of a tool result: text parts as they are, other parts named by kind. */
function resultText(result: CallToolResult): string {
  const parts = (result.content ?? []).map((part) => {
    switch (part.type) {
      case "text":
        return part.text;
      case "resource":
        return "text" in part.resource ? String(part.resource.text) : `[resource ${part.resource.uri}]`;
      case "resource_link":
        return `[resource link ${part.uri}]`;
      default:
        return `[${part.type} content]`;
    }
  });
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return parts.join("\n");
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function stderrTail(connection: Pick<Connection, "stderr">): string {
  return connection.stderr.length ? ` (server stderr: ${connection.stderr.join(" | ")})` : "";
}
