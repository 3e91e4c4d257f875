/**
 * The turn work projection: rows and block folded from a turn's events, paging over the
 * rows (also while a running turn appends), targeted refresh by id, change detection for
 * the notifications, and every wire object valid under the strict validators.
 *
 * The logs are built by hand, but every event's params is checked against its
 * notification schema as it is appended, so the fixtures are logs a gateway could write.
 */
import { describe, expect, it } from "vitest";
import type {
  Turn,
  TurnItem,
  TurnItemStatus,
  TurnPermissionApprovalResolution,
  TurnWorkBlockState,
  TurnWorkItem,
  TurnWorkPageAnchor,
} from "../../generated/types.js";
import { notificationIssues, validate, type TypeName } from "../../generated/validators.js";
import { foldTurn } from "../../packages/gateway/src/log/fold.js";
import {
  blockChanged,
  changedWorkItemIds,
  DEFAULT_WORK_PAGE_LIMIT,
  pageWork,
  PROJECTION_VERSION,
  projectWork,
  WorkCursorError,
  workItemsGet,
  type WorkPage,
  type WorkProjection,
  WorkFold,
} from "../../packages/gateway/src/views/work.js";
import type { StoredEvent } from "../../packages/gateway/src/store/store.js";
import { SUPERVISED_PROFILE, THREAD, TURN } from "../fixtures/sample-turn.js";

// ---- a hand-built turn log ------------------------------------------------------------

const WORKSPACE = "ws_000000000000000001";
const T0 = Date.parse("2026-03-01T12:00:00.000Z");

const PROFILE = SUPERVISED_PROFILE;

/** A turn's event log, appended to the way the gateway appends: gapless sequence, schema-checked params. */
class TurnLog {
  readonly events: StoredEvent[] = [];
  private clock = T0;
  private turn: Turn | undefined;
  private nextItem = 1;

  constructor(readonly turnId = TURN) {}

  /** Appends one event `stepMs` after the previous one, or at `recordedAt` when given. */
  emit(method: string, params: Record<string, unknown>, options: { stepMs?: number; recordedAt?: string } = {}): StoredEvent {
    this.clock += options.stepMs ?? 250;
    const sequence = this.events.length + 1;
    const full = { thread_id: THREAD, turn_id: this.turnId, sequence, ...params };
    const issues = notificationIssues(method, full, "strict");
    if (issues) throw new Error(`fixture builds an invalid ${method}: ${JSON.stringify(issues)}`);
    const event: StoredEvent = {
      thread_id: THREAD,
      turn_id: this.turnId,
      sequence,
      method,
      params: full,
      paramsJson: JSON.stringify(full),
      recorded_at: options.recordedAt ?? new Date(this.clock).toISOString(),
    };
    this.events.push(event);
    return event;
  }

  get last(): StoredEvent {
    return this.events[this.events.length - 1]!;
  }

  start(): this {
    this.turn = {
      id: this.turnId,
      thread_id: THREAD,
      workspace_id: WORKSPACE,
      status: "InProgress",
      mode: "Agent",
      created_at: new Date(this.clock).toISOString(),
      model_provider: "scripted",
      model: "scripted-1",
      prompt_manifest: null,
      permission_profile: structuredClone(PROFILE) as Turn["permission_profile"],
    };
    this.emit("turn/started", { turn: this.turn });
    this.emit("turn/permission/audit", {
      audit_id: "aud_1",
      kind: "profile_selected",
      profile: structuredClone(PROFILE),
      recorded_at: new Date(this.clock).toISOString(),
    });
    return this;
  }

  /** The user's message, recorded as turn/start records it: opened and completed at once. */
  user(content: Record<string, unknown>[]): this {
    const item = { type: "userMessage", id: `${this.turnId}_user`, status: "completed", content };
    this.emit("item/started", { item_id: item.id, item });
    this.emit("item/completed", { item_id: item.id, item });
    return this;
  }

  id(): string {
    return `${this.turnId}_item_${this.nextItem++}`;
  }

  open(item: TurnItem): string {
    this.emit("item/started", { item_id: item.id, item });
    return item.id;
  }

  delta(itemId: string, stream: string, delta: string): StoredEvent {
    const method = {
      agent_message: "item/agent_message/delta",
      stdout: "item/command_execution/output_delta",
      stderr: "item/command_execution/output_delta",
      file_change: "item/file_change/output_delta",
      tool_progress: "item/tool/progress",
      generic: "item/tool/progress",
    }[stream]!;
    return this.emit(method, { item_id: itemId, stream, delta });
  }

  update(item: TurnItem): StoredEvent {
    return this.emit("item/updated", { item_id: item.id, item });
  }

  finishItem(item: TurnItem): StoredEvent {
    return this.emit("item/completed", { item_id: item.id, item });
  }

  /** An agent message streamed in `chunks` and completed. */
  message(chunks: string[], status: TurnItemStatus = "completed"): string {
    const id = this.open({ type: "agentMessage", id: this.id(), status: "in_progress", round: 1, text: "" });
    for (const chunk of chunks) this.delta(id, "agent_message", chunk);
    this.finishItem({ type: "agentMessage", id, status, round: 1, text: chunks.join("") });
    return id;
  }

  /** A shell command opened and left running. */
  command(command: string): TurnItem & { type: "commandExecution" } {
    const item = {
      type: "commandExecution" as const,
      id: this.id(),
      status: "in_progress" as const,
      round: 1,
      command,
      cwd: "/work/project",
      arguments: { command },
      tool_call_id: `call_${this.nextItem}`,
    };
    this.open(item);
    return item;
  }

  requestOpened(itemId: string): string {
    const requestId = `perm_${itemId}`;
    this.emit("turn/permission/request/opened", {
      request: {
        request_id: requestId,
        workspace_id: WORKSPACE,
        thread_id: THREAD,
        turn_id: this.turnId,
        tool_name: "shell",
        action: "shell_command",
        scope_hash: `sha256:${itemId}`,
        reason: "the supervised profile asks before shell commands",
        summary: "Run npm test",
        details: { command: "npm test" },
        allowed_scopes: ["allow_once", "allow_for_turn"],
        item_id: itemId,
        created_at: new Date(this.clock).toISOString(),
        expires_at: new Date(this.clock + 300_000).toISOString(),
        resolve_token: "tok_fixture",
      },
    });
    return requestId;
  }

  requestResolved(requestId: string, resolution: TurnPermissionApprovalResolution): void {
    this.emit("turn/permission/request/resolved", { request_id: requestId, resolution, resolved_at: new Date(this.clock).toISOString() });
  }

  private snapshot(status: Turn["status"], extra: Partial<Turn> = {}): Turn {
    const usage = { input_tokens: 1200, output_tokens: 300, total_tokens: 1500 };
    const terminal = status !== "Blocked";
    return { ...this.turn!, status, usage, ...(terminal ? { completed_at: new Date(this.clock + 250).toISOString() } : {}), ...extra };
  }

  complete(): StoredEvent {
    const turn = this.snapshot("Completed");
    return this.emit("turn/completed", { turn, usage: turn.usage });
  }

  fail(status: "Failed" | "Interrupted", error: NonNullable<Turn["error"]>): StoredEvent {
    return this.emit("turn/failed", { turn: this.snapshot(status, { error }), error });
  }

  block(reason: string): StoredEvent {
    const blocked = { reason, recovery_job_id: "rjob_1" };
    return this.emit("turn/blocked", { turn: this.snapshot("Blocked", { blocked }), ...blocked });
  }
}

const project = (log: TurnLog | readonly StoredEvent[]): WorkProjection => {
  const events = log instanceof TurnLog ? log.events : log;
  const projection = projectWork(events, { workspaceId: WORKSPACE, threadId: THREAD, turnId: events[0]?.turn_id ?? TURN });
  if (!projection) throw new Error("the fixture log has no turn/started");
  expectProjectionValid(projection);
  return projection;
};

const micros = (event: StoredEvent) => Date.parse(event.recorded_at) * 1000;
const ids = (rows: readonly TurnWorkItem[]) => rows.map((row) => row.workItemId);

function expectValid(name: TypeName, value: unknown): void {
  const result = validate(name, value, "strict");
  expect(result.ok ? [] : result.errors, `${name}: ${JSON.stringify(value).slice(0, 300)}`).toEqual([]);
}

/** Every wire object the projection yields, and the responses a handler builds from it. */
function expectProjectionValid(projection: WorkProjection): void {
  expectValid("TurnWorkBlock", projection.block);
  for (const row of projection.items) expectValid("TurnWorkItem", row);
  const { workspaceId, threadId, turnId, freshness } = projection;
  expectValid("TurnWorkStateChangedNotification", { threadId, turnId, ...freshness, work: projection.block });
  expectValid("TurnWorkItemsChangedNotification", { threadId, turnId, ...freshness, changedWorkItemIds: ids(projection.items) });
  expectValid("TurnWorkItemsGetResponse", { workspaceId, threadId, turnId, ...freshness, ...workItemsGet(projection, ["work_missing"]) });
}

function page(projection: WorkProjection, anchor: TurnWorkPageAnchor, limit?: number): WorkPage {
  const result = pageWork(projection, { threadId: THREAD, turnId: projection.turnId, anchor, ...(limit === undefined ? {} : { limit }) });
  expectValid("TurnWorkPageState", result.page);
  for (const row of result.items) expectValid("TurnWorkItem", row);
  const { workspaceId, threadId, turnId, freshness } = projection;
  expectValid("TurnWorkPageResponse", { workspaceId, threadId, turnId, ...freshness, work: projection.block, ...result });
  // Within a page, rows are always oldest first by plain string comparison of orderKey.
  const keys = result.items.map((row) => row.orderKey);
  expect(keys).toEqual([...keys].sort());
  return result;
}

/** A turn with `count` finished work rows of mixed kinds after the user's message. */
function turnWith(count: number, turnId = TURN): TurnLog {
  const log = new TurnLog(turnId).start().user([{ type: "text", text: "Tidy the repository", textElements: [] }]);
  for (let i = 0; i < count; i++) {
    if (i % 3 === 0) log.message([`step ${i} `, "done"]);
    else if (i % 3 === 1) {
      const command = log.command(`ls dir${i}`);
      log.delta(command.id, "stdout", `dir${i}\n`);
      log.finishItem({ ...command, status: "completed", stdout: `dir${i}\n`, exit_code: 0, outcome: "success" });
    } else {
      const id = log.id();
      log.open({ type: "reasoning", id, status: "in_progress", round: 1, text: "" });
      log.finishItem({ type: "reasoning", id, status: "completed", round: 1, text: `thinking ${i}` });
    }
  }
  return log;
}

// ---- rows -------------------------------------------------------------------------------

describe("projectWork rows", () => {
  it("is undefined until the log holds turn/started", () => {
    expect(projectWork([], { workspaceId: WORKSPACE, threadId: THREAD, turnId: TURN })).toBeUndefined();
  });

  it("makes one row per item except the user's message, in the order they were opened, with their provenance", () => {
    const log = new TurnLog().start().user([{ type: "text", text: "Fix the failing parser test", textElements: [] }]);
    const reasoningId = log.id();
    const reasoningStarted = log.emit("item/started", {
      item_id: reasoningId,
      item: { type: "reasoning", id: reasoningId, status: "in_progress", round: 1, text: "" },
    });
    const command = log.command("npm test");
    const commandStarted = log.last;
    // The reasoning finishes after the command opened: order stays by opening, not by finishing.
    const reasoningDone = log.finishItem({
      type: "reasoning",
      id: reasoningId,
      status: "completed",
      round: 1,
      text: "The test expects ISO dates.",
    });
    log.delta(command.id, "stdout", "1 failing\n");
    const commandDone = log.finishItem({ ...command, status: "failed", stdout: "1 failing\n", exit_code: 1, outcome: "error" });
    log.complete();

    const projection = project(log);
    expect(ids(projection.items)).toEqual([reasoningId, command.id]);
    const [reasoning, shell] = projection.items;
    expect(reasoning).toEqual({
      workItemId: reasoningId,
      item: { type: "reasoning", id: reasoningId, status: "completed", round: 1, text: "The test expects ISO dates." },
      status: "completed",
      itemType: "reasoning",
      orderKey: String(reasoningStarted.sequence).padStart(12, "0"),
      createdAtUnixMicros: micros(reasoningStarted),
      updatedAtUnixMicros: micros(reasoningDone),
      sourceSequence: reasoningDone.sequence,
      sourceUpdatedAtUnixMicros: micros(reasoningDone),
    });
    expect(shell).toMatchObject({
      workItemId: command.id,
      status: "failed",
      itemType: "commandExecution",
      orderKey: String(commandStarted.sequence).padStart(12, "0"),
      createdAtUnixMicros: micros(commandStarted),
      // turn/completed came later but did not touch the row.
      sourceSequence: commandDone.sequence,
      updatedAtUnixMicros: micros(commandDone),
    });
  });

  it("orders rows by plain string comparison of orderKey even when sequences gain digits", () => {
    const log = turnWith(40); // sequences run past 9 and 99
    const keys = project(log).items.map((row) => row.orderKey);
    expect(keys.length).toBe(40);
    expect([...keys].sort()).toEqual(keys);
    expect(Number(keys[keys.length - 1])).toBeGreaterThan(99);
  });

  it("keeps microsecond digits of recorded_at", () => {
    const log = new TurnLog().start();
    const started = log.emit(
      "item/started",
      { item_id: "i1", item: { type: "reasoning", id: "i1", status: "in_progress", text: "" } },
      { recordedAt: "2026-03-01T12:00:05.123456Z" },
    );
    const projection = project(log);
    expect(projection.items[0]!.createdAtUnixMicros).toBe(Date.parse("2026-03-01T12:00:05.123Z") * 1000 + 456);
    expect(projection.freshness.projectionUpdatedAtUnixMicros).toBe(projection.items[0]!.createdAtUnixMicros);
    expect(started.sequence).toBe(projection.freshness.sourceHighWatermark);
  });
});

// ---- deltas -------------------------------------------------------------------------------

describe("projectWork folds deltas and updates into items", () => {
  const log = new TurnLog().start().user([{ type: "text", text: "Run the tests", textElements: [] }]);
  const messageId = log.open({ type: "agentMessage", id: log.id(), status: "in_progress", round: 1, text: "" });
  log.delta(messageId, "agent_message", "Running ");
  const command = log.command("npm test");
  log.delta(command.id, "stdout", "> vitest run\n");
  log.delta(messageId, "agent_message", "the tests.");
  log.delta(command.id, "stderr", "warning: slow test\n");
  // item/updated carries the whole item as the runner holds it, deltas so far included.
  log.update({
    ...command,
    stdout: "> vitest run\n",
    stderr: "warning: slow test\n",
    output_policy: { truncated: false, max_display_bytes: 65536 },
  });
  log.delta(command.id, "stdout", "42 passed\n");
  const lastCommandDelta = log.last;
  const edit = log.id();
  log.open({
    type: "fileChange",
    id: edit,
    status: "in_progress",
    round: 1,
    path: "/work/project/a.ts",
    change_kind: "modify",
    arguments: { path: "a.ts" },
  });
  log.delta(edit, "file_change", "patched 3 lines");
  const tool = log.id();
  log.open({ type: "dynamicToolCall", id: tool, status: "in_progress", round: 1, tool_name: "lookup", arguments: {} });
  log.delta(tool, "tool_progress", "50%…");
  log.delta(tool, "tool_progress", "100%");

  it("appends each stream to its field, on top of item/updated", () => {
    const rows = new Map(project(log).items.map((row) => [row.workItemId, row.item as unknown as Record<string, unknown>]));
    expect(rows.get(messageId)!.text).toBe("Running the tests.");
    expect(rows.get(command.id)).toMatchObject({
      stdout: "> vitest run\n42 passed\n",
      stderr: "warning: slow test\n",
      output_policy: { truncated: false, max_display_bytes: 65536 },
    });
    expect(rows.get(edit)!.output).toBe("patched 3 lines");
    expect(rows.get(tool)!.progress).toBe("50%…100%");
  });

  it("makes a delta the row's latest source", () => {
    const row = project(log).items.find((r) => r.workItemId === command.id)!;
    expect(row.sourceSequence).toBe(lastCommandDelta.sequence);
    expect(row.updatedAtUnixMicros).toBe(micros(lastCommandDelta));
  });

  it("ignores a delta of an unknown stream or item, as the fold does", () => {
    const before = project(log);
    const events = [...log.events];
    const more = new TurnLog();
    more.events.push(...events);
    more.delta(tool, "generic", "ignored");
    more.delta("no_such_item", "agent_message", "ignored");
    const after = project(more);
    expect(after.items).toEqual(before.items);
    expect(changedWorkItemIds(before, after)).toEqual([]);
    expect(after.freshness.sourceHighWatermark).toBe(before.freshness.sourceHighWatermark + 2);
  });

  it("reads the same from one fold kept up to date as from folding each prefix afresh", () => {
    // The live gateway keeps one fold per turn and reads it between events; deltas are held
    // as pieces and an item is built when read, so reads at any point must see every delta.
    const live = new WorkFold({ workspaceId: WORKSPACE, threadId: THREAD, turnId: TURN });
    const earlier: { state: ReturnType<typeof foldTurn>; items: TurnItem[] }[] = [];
    for (let n = 1; n <= log.events.length; n++) {
      live.apply(log.events[n - 1]!);
      const prefix = log.events.slice(0, n);
      const state = live.turn.state();
      expect(state?.items, `turn state after event ${n}`).toEqual(foldTurn(prefix)?.items);
      if (n % 2 === 0)
        expect(
          live.view()?.items.map((row) => row.item),
          `work rows after event ${n}`,
        ).toEqual(project(prefix).items.map((row) => row.item));
      if (state) earlier.push({ state, items: structuredClone([...state.items]) });
    }
    // A state handed out is a snapshot: the deltas folded in after it did not change it.
    for (const { state, items } of earlier) expect(state!.items).toEqual(items);
    expect((live.turn.item(messageId) as { text: string }).text).toBe("Running the tests.");
  });

  it("shows every item as turn/get's fold does, after every event", () => {
    for (let n = 1; n <= log.events.length; n++) {
      const prefix = log.events.slice(0, n);
      const fold = foldTurn(prefix)!.items.filter((item) => item.type !== "userMessage");
      expect(
        project(prefix).items.map((row) => row.item),
        `after event ${n}`,
      ).toEqual(fold);
    }
  });
});

// ---- block state, counts, presentation ---------------------------------------------------

describe("projectWork block", () => {
  const FAILURE = { kind: "provider_error" as const, message: "the model provider returned 503", retryable: true };

  /** A turn with one completed message, one declined and one running command. */
  function base(): { log: TurnLog; running: TurnItem & { type: "commandExecution" } } {
    const log = new TurnLog().start().user([{ type: "text", text: "Deploy the docs", textElements: [] }]);
    log.message(["Deploying."]);
    const declined = log.command("rm -rf build");
    log.finishItem({ ...declined, status: "declined", outcome: "declined", error: { message: "the user declined" } });
    const running = log.command("npm run build");
    return { log, running };
  }

  const cases: [
    string,
    (log: TurnLog, running: TurnItem & { type: "commandExecution" }) => void,
    { state: TurnWorkBlockState; ended: boolean; collapsed: boolean; subtitle?: string; counts: [number, number, number, number] },
  ][] = [
    ["running", () => {}, { state: "running", ended: false, collapsed: false, counts: [3, 1, 1, 1] }],
    [
      "awaiting_approval",
      (log, running) => void log.requestOpened(running.id),
      { state: "awaiting_approval", ended: false, collapsed: false, subtitle: "Waiting for approval: Run npm test", counts: [3, 1, 1, 1] },
    ],
    [
      "running again once the request is answered",
      (log, running) => log.requestResolved(log.requestOpened(running.id), "allow_once"),
      { state: "running", ended: false, collapsed: false, counts: [3, 1, 1, 1] },
    ],
    [
      "blocked",
      (log, running) => {
        log.finishItem({ ...running, status: "cancelled", outcome: "cancelled" });
        log.block("max_tool_calls_per_window");
      },
      { state: "blocked", ended: false, collapsed: false, subtitle: "Blocked: max_tool_calls_per_window", counts: [3, 0, 1, 2] },
    ],
    [
      "completed",
      (log, running) => {
        log.finishItem({ ...running, status: "completed", exit_code: 0, outcome: "success" });
        log.complete();
      },
      { state: "completed", ended: true, collapsed: true, counts: [3, 0, 2, 1] },
    ],
    [
      "failed",
      (log, running) => {
        log.finishItem({ ...running, status: "failed", exit_code: 2, outcome: "error" });
        log.fail("Failed", FAILURE);
      },
      { state: "failed", ended: true, collapsed: false, subtitle: FAILURE.message, counts: [3, 0, 1, 2] },
    ],
    [
      "interrupted",
      (log, running) => {
        log.finishItem({ ...running, status: "cancelled", outcome: "cancelled" });
        log.fail("Interrupted", { kind: "cancelled", message: "cancelled by the user", retryable: false });
      },
      { state: "interrupted", ended: true, collapsed: true, subtitle: "cancelled by the user", counts: [3, 0, 1, 2] },
    ],
  ];

  it.each(cases)("%s", (_name, act, want) => {
    const { log, running } = base();
    act(log, running);
    const turnEnd = log.last;
    // A later audit record is part of the log but neither ends nor extends an ended turn.
    log.emit(
      "turn/permission/audit",
      { audit_id: "aud_late", kind: "decision_allowed", recorded_at: new Date(T0).toISOString() },
      { stepMs: 5000 },
    );
    const { block } = project(log);
    const [total, inProgress, completed, failed] = want.counts;
    expect(block.state).toBe(want.state);
    expect(block.counts).toEqual({ total, inProgress, completed, failed });
    expect(block.presentation).toEqual({
      title: "Deploy the docs",
      collapsed: want.collapsed,
      ...(want.subtitle ? { subtitle: want.subtitle } : {}),
    });
    const startedAt = micros(log.events[0]!);
    expect(block.startedAtUnixMicros).toBe(startedAt);
    if (want.ended) {
      expect(block.endedAtUnixMicros).toBe(micros(turnEnd));
      expect(block.elapsedMs).toBe((micros(turnEnd) - startedAt) / 1000);
    } else {
      expect(block).not.toHaveProperty("endedAtUnixMicros");
      expect(block.elapsedMs).toBe((micros(log.last) - startedAt) / 1000);
    }
    expect(block.blockId).toBe(`blk_${TURN}`);
    expect(block.turnId).toBe(TURN);
  });

  it("points its cursors at the first and last rows, and has none while it has no rows", () => {
    const log = new TurnLog().start().user([{ type: "text", text: "Hello", textElements: [] }]);
    const empty = project(log);
    expect(empty.block.cursors).toEqual({ oldest: null, newest: null });
    expect(empty.block.counts).toEqual({ total: 0, inProgress: 0, completed: 0, failed: 0 });
    const first = log.message(["Hi."]);
    const second = log.message(["Anything else?"]);
    const { block, ...projection } = project(log);
    expect(page({ block, ...projection }, { kind: "after", cursor: block.cursors.oldest! }).items.map((r) => r.workItemId)).toEqual([
      second,
    ]);
    expect(page({ block, ...projection }, { kind: "before", cursor: block.cursors.newest! }).items.map((r) => r.workItemId)).toEqual([
      first,
    ]);
  });

  const titles: [string, Record<string, unknown>[], string][] = [
    [
      "the first text input",
      [
        { type: "image", url: "https://example.com/a.png" },
        { type: "text", text: "Describe this image" },
        { type: "text", text: "in detail" },
      ],
      "Describe this image",
    ],
    ["one line, whitespace collapsed", [{ type: "text", text: "  Fix\n\nthe   build\t" }], "Fix the build"],
    [
      "the first text that is not blank",
      [
        { type: "text", text: " \n " },
        { type: "text", text: "Second" },
      ],
      "Second",
    ],
    ["a fallback without any text", [{ type: "image", url: "https://example.com/a.png" }], "Turn work"],
    ["80 characters exactly, kept whole", [{ type: "text", text: "a".repeat(80) }], "a".repeat(80)],
    ["longer text cut to 80 characters with an ellipsis", [{ type: "text", text: "word ".repeat(40) }], `${"word ".repeat(15)}word…`],
    ["no emoji cut in half", [{ type: "text", text: "😀".repeat(100) }], `${"😀".repeat(79)}…`],
  ];
  it.each(titles)("takes its title from %s", (_name, content, title) => {
    const got = project(new TurnLog().start().user(content)).block.presentation.title;
    expect(got).toBe(title);
    expect([...got].length).toBeLessThanOrEqual(80);
  });
});

// ---- freshness ------------------------------------------------------------------------------

describe("projectWork freshness", () => {
  it("never goes back as events are appended, even when the clock steps back", () => {
    const log = turnWith(6);
    const command = log.command("sleep 1");
    log.delta(command.id, "stdout", "a");
    // The host clock is set back a minute between two appends.
    log.emit(
      "item/command_execution/output_delta",
      { item_id: command.id, stream: "stdout", delta: "b" },
      { recordedAt: new Date(T0 - 60_000).toISOString() },
    );
    log.finishItem({ ...command, status: "completed", stdout: "ab", exit_code: 0, outcome: "success" });
    log.complete();

    let previous: WorkProjection | undefined;
    let sawClockStepBack = false;
    for (let n = 1; n <= log.events.length; n++) {
      const prefix = log.events.slice(0, n);
      const now = project(prefix);
      const last = prefix[n - 1]!;
      expect(now.freshness.projectionVersion).toBe(PROJECTION_VERSION);
      expect(now.freshness.sourceHighWatermark).toBe(last.sequence);
      if (previous) {
        expect(now.freshness.sourceHighWatermark).toBeGreaterThan(previous.freshness.sourceHighWatermark);
        expect(now.freshness.projectionUpdatedAtUnixMicros).toBeGreaterThanOrEqual(previous.freshness.projectionUpdatedAtUnixMicros);
        if (micros(last) < previous.freshness.projectionUpdatedAtUnixMicros) sawClockStepBack = true;
        else expect(now.freshness.projectionUpdatedAtUnixMicros).toBe(micros(last));
        // A row a client already holds is never replaced by one with an older source.
        const held = new Map(previous.items.map((row) => [row.workItemId, row.sourceSequence]));
        for (const row of now.items) expect(row.sourceSequence).toBeGreaterThanOrEqual(held.get(row.workItemId) ?? 0);
        expect(now.block.elapsedMs).toBeGreaterThanOrEqual(previous.block.elapsedMs);
      }
      previous = now;
    }
    expect(sawClockStepBack).toBe(true);
  });
});

// ---- paging ---------------------------------------------------------------------------------

/** Walks from one end to the other with cursors, checking the hasMore flags page by page. */
function walk(projection: WorkProjection, limit: number, direction: "older" | "newer"): string[][] {
  const pages: string[][] = [];
  let current = page(projection, { kind: direction === "older" ? "newest" : "oldest" }, limit);
  for (;;) {
    pages.push(ids(current.items));
    expect(current.items.length).toBeLessThanOrEqual(limit);
    const first = pages.length === 1;
    // The end the walk started from has nothing beyond it.
    expect(direction === "older" ? current.page.hasMoreAfter : current.page.hasMoreBefore).toBe(!first);
    const more = direction === "older" ? current.page.hasMoreBefore : current.page.hasMoreAfter;
    if (!more) break;
    expect(current.items.length).toBe(limit);
    expect(pages.length, "walk does not end").toBeLessThanOrEqual(projection.items.length);
    const cursor = direction === "older" ? current.page.beforeCursor : current.page.afterCursor;
    current = page(projection, { kind: direction === "older" ? "before" : "after", cursor: cursor! }, limit);
  }
  return pages;
}

describe("pageWork", () => {
  const projection = project(turnWith(23));
  const all = ids(projection.items);

  it.each([1, 2, 3, 7, 50])("visits every row once, in order, with limit %i, from either end", (limit) => {
    const older = walk(projection, limit, "older");
    expect(older.length).toBe(Math.ceil(all.length / limit));
    expect([...older].reverse().flat()).toEqual(all);

    const newer = walk(projection, limit, "newer");
    expect(newer.length).toBe(Math.ceil(all.length / limit));
    expect(newer.flat()).toEqual(all);
  });

  it("uses the default page size without a limit", () => {
    const big = project(turnWith(DEFAULT_WORK_PAGE_LIMIT + 5));
    const newest = page(big, { kind: "newest" });
    expect(ids(newest.items)).toEqual(ids(big.items).slice(5));
    expect(newest.page.hasMoreBefore).toBe(true);
    expect(ids(page(big, { kind: "oldest" }).items)).toEqual(ids(big.items).slice(0, DEFAULT_WORK_PAGE_LIMIT));
  });

  it("returns an empty page with no cursors for a block without rows", () => {
    const empty = project(new TurnLog().start().user([{ type: "text", text: "Hi", textElements: [] }]));
    for (const anchor of [{ kind: "newest" }, { kind: "oldest" }] as const) {
      expect(page(empty, anchor)).toEqual({
        items: [],
        page: { beforeCursor: null, afterCursor: null, hasMoreBefore: false, hasMoreAfter: false },
      });
    }
  });

  it("returns an empty page after the newest row, and before the oldest", () => {
    expect(page(projection, { kind: "after", cursor: projection.block.cursors.newest! }, 5)).toEqual({
      items: [],
      page: { beforeCursor: null, afterCursor: null, hasMoreBefore: true, hasMoreAfter: false },
    });
    expect(page(projection, { kind: "before", cursor: projection.block.cursors.oldest! }, 5)).toEqual({
      items: [],
      page: { beforeCursor: null, afterCursor: null, hasMoreBefore: false, hasMoreAfter: true },
    });
  });
});

describe("pageWork while the turn appends", () => {
  /** A running turn that opens a new command (and updates an old row) whenever `grow` is called. */
  function growing() {
    const log = turnWith(5);
    const watched = log.command("tail -f log");
    return {
      log,
      grow(count: number) {
        log.delta(watched.id, "stdout", "line\n"); // an older row changes too
        for (let i = 0; i < count; i++) log.message([`more ${log.events.length}`]);
        return project(log);
      },
    };
  }

  it.each([1, 2, 3])("toward newer: every row once, new rows included (limit %i)", (limit) => {
    const { grow, log } = growing();
    let current = page(project(log), { kind: "oldest" }, limit);
    const seen = ids(current.items);
    // An empty page has no cursors: the client keeps the one it last used.
    let cursor = current.page.afterCursor!;
    const next = (view: WorkProjection) => {
      current = page(view, { kind: "after", cursor }, limit);
      seen.push(...ids(current.items));
      cursor = current.page.afterCursor ?? cursor;
    };
    // Rows land between the first six requests; then the walk runs to the end.
    for (let round = 1; round <= 6 || current.page.hasMoreAfter; round++) {
      next(round <= 6 ? grow(round % 3) : project(log));
      expect(round, "walk does not end").toBeLessThan(100);
    }
    // At the end, rows the turn appends later are reached from the last cursor.
    const before = seen.length;
    next(grow(2));
    for (let round = 1; current.page.hasMoreAfter; round++) {
      next(project(log));
      expect(round, "walk does not end").toBeLessThan(100);
    }
    expect(seen.length - before).toBe(2);
    expect(seen).toEqual(ids(project(log).items));
  });

  it.each([1, 2, 3])("toward older: every row that existed once, then the new ones after (limit %i)", (limit) => {
    const { grow, log } = growing();
    const start = page(project(log), { kind: "newest" }, limit);
    const older: string[][] = [ids(start.items)];
    let current = start;
    while (current.page.hasMoreBefore) {
      const now = grow(1);
      current = page(now, { kind: "before", cursor: current.page.beforeCursor! }, limit);
      older.push(ids(current.items));
      expect(older.length, "walk does not end").toBeLessThan(100);
    }
    const final = project(log);
    // Rows appended during the walk are at the newest end: reached from the first page's afterCursor.
    const newer: string[] = [];
    let forward = page(final, { kind: "after", cursor: start.page.afterCursor! }, limit);
    newer.push(...ids(forward.items));
    while (forward.page.hasMoreAfter) {
      forward = page(final, { kind: "after", cursor: forward.page.afterCursor! }, limit);
      newer.push(...ids(forward.items));
      expect(newer.length, "walk does not end").toBeLessThan(100);
    }
    expect(newer.length).toBeGreaterThan(0);
    expect([...[...older].reverse().flat(), ...newer]).toEqual(ids(final.items));
  });
});

describe("pageWork refuses cursors it did not issue", () => {
  const log = turnWith(4);
  const projection = project(log);
  const other = project(turnWith(4, "trn_other"));
  const forge = (text: string) => Buffer.from(text, "utf8").toString("base64url");
  const userSequence = log.events.find((e) => e.method === "item/started")!.sequence;
  const valid = projection.block.cursors.oldest!;

  const bad: [string, string, RegExp][] = [
    ["empty", "", /is not a turn work cursor/],
    ["not base64url", "%%%", /is not a turn work cursor/],
    ["base64 with padding", `${valid}=`, /is not a turn work cursor/],
    ["valid with a character appended", `${valid}!`, /is not a turn work cursor/],
    ["of the wrong shape", forge("hello"), /is not a turn work cursor/],
    ["with a short order key", forge(`${PROJECTION_VERSION}:${TURN}:12`), /is not a turn work cursor/],
    ["of another projection version", forge(`${PROJECTION_VERSION + 1}:${TURN}:000000000005`), /projection version 2, not 1/],
    ["of another turn", other.block.cursors.oldest!, /belongs to turn trn_other, not trn_000000000000000001/],
    [
      "naming the user's message, which is no row",
      forge(`${PROJECTION_VERSION}:${TURN}:${String(userSequence).padStart(12, "0")}`),
      /names no work item of turn trn_000000000000000001/,
    ],
    ["naming a row that does not exist", forge(`${PROJECTION_VERSION}:${TURN}:999999999999`), /names no work item/],
  ];
  it.each(bad)("%s", (_name, cursor, why) => {
    expect(page(projection, { kind: "after", cursor: valid }).items.length).toBeGreaterThan(0);
    for (const kind of ["before", "after"] as const) {
      let thrown: unknown;
      try {
        pageWork(projection, { threadId: THREAD, turnId: TURN, anchor: { kind, cursor } });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(WorkCursorError);
      const error = thrown as WorkCursorError;
      expect(error.message).toContain(`cursor "${cursor}"`);
      expect(error.message).toMatch(why);
      expect(error.cursor).toBe(cursor);
      expect(error.pointer).toBe("/anchor/cursor");
    }
  });
});

// ---- turn/work/items/get ------------------------------------------------------------------

describe("workItemsGet", () => {
  const log = turnWith(6);
  const projection = project(log);
  const rows = ids(projection.items);

  it("returns present rows in row order and lists the others as removed, each once", () => {
    const asked = [rows[4]!, "work_unknown", rows[1]!, `${TURN}_user`, rows[4]!, "work_unknown"];
    const got = workItemsGet(projection, asked);
    expect(ids(got.items)).toEqual([rows[1], rows[4]]);
    expect(got.items).toEqual([projection.items[1], projection.items[4]]);
    expect(got.removedWorkItemIds).toEqual(["work_unknown", `${TURN}_user`]);
    expectValid("TurnWorkItemsGetResponse", { workspaceId: WORKSPACE, threadId: THREAD, turnId: TURN, ...projection.freshness, ...got });
  });

  it("returns every row when asked for all of them, and nothing removed", () => {
    expect(workItemsGet(projection, [...rows].reverse())).toEqual({ items: projection.items, removedWorkItemIds: [] });
  });
});

// ---- change detection ----------------------------------------------------------------------

describe("changedWorkItemIds and blockChanged", () => {
  it("name what each appended event changed", () => {
    const log = new TurnLog().start();
    let command: TurnItem & { type: "commandExecution" } = undefined!;
    let request = "";
    let message = "";
    // [what happens, the events, the rows it changes, whether the block summary changes]
    const steps: [string, () => void, () => string[], boolean][] = [
      // The user's message is no row, but it gives the block its title.
      ["user message", () => log.user([{ type: "text", text: "Build it", textElements: [] }]), () => [], true],
      ["a row opens", () => (command = log.command("make")), () => [command.id], true],
      [
        "output arrives: the row changes, the summary does not",
        () => log.delta(command.id, "stdout", "cc -o app\n"),
        () => [command.id],
        false,
      ],
      ["an approval is asked", () => (request = log.requestOpened(command.id)), () => [], true],
      [
        "an audit record",
        () => log.emit("turn/permission/audit", { audit_id: "aud_2", kind: "request_opened", recorded_at: new Date(T0).toISOString() }),
        () => [],
        false,
      ],
      ["the approval is given", () => log.requestResolved(request, "allow_once"), () => [], true],
      [
        "the row completes",
        () => log.finishItem({ ...command, status: "completed", exit_code: 0, outcome: "success", stdout: "cc -o app\n" }),
        () => [command.id],
        true,
      ],
      ["a message opens and streams", () => (message = log.message(["Built."])), () => [message], true],
      ["the turn completes", () => log.complete(), () => [], true],
    ];
    for (const [name, act, changed, summaryChanged] of steps) {
      const previous = project(log);
      act();
      const after = project(log);
      expect(changedWorkItemIds(previous, after), name).toEqual(changed());
      expect(blockChanged(previous, after), name).toBe(summaryChanged);
      // elapsedMs moved every time, yet it alone never makes the summary "changed".
      expect(after.block.elapsedMs, name).toBeGreaterThan(previous.block.elapsedMs);
    }
    const final = project(log);
    expect(changedWorkItemIds(undefined, final)).toEqual(ids(final.items));
    expect(blockChanged(undefined, final)).toBe(true);
    expect(changedWorkItemIds(final, final)).toEqual([]);
    expect(blockChanged(final, final)).toBe(false);
  });
});
