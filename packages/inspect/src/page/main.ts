/**
 * The inspector page: connects to the inspector's bridge (/gateway on its own server, which
 * passes frames to and from the gateway unchanged) with the client SDK's GatewayConnection,
 * records and checks every frame both ways (frames.ts), and lets a person start threads and
 * turns, watch them live (turn.ts), answer approvals and questions, cancel and resume, read
 * turn/items, the work pages and the delegation routes, and export the session.
 */
import {
  connectBrowserWebSocket,
  emptyTimeline,
  GatewayConnection,
  reduceTimeline,
  timelineRows,
  type ProtocolClient,
  type TimelineState,
} from "@turnspec/client/browser";
import type { Thread, TurnCapability, TurnMode, TurnPermissionMode, TurnStartParams, TurnWorkPageAnchor } from "@turnspec/protocol/types";
import type { InspectorInfo } from "../server.js";
import { INSPECTOR_PROTOCOL, TOKEN_PROTOCOL_PREFIX } from "../page-token.js";
import { h, inWords, json, replace } from "./dom.js";
import { FrameLog } from "./frames.js";
import { TurnView } from "./turn.js";

interface ThreadEntry {
  thread: Thread | undefined;
  readonly turns: string[];
}

const DEFAULT_SCRIPT = JSON.stringify(
  [
    { tool: "shell", args: { command: "echo hello from the inspector" } },
    { say: "The command ran. Done.", chunks: 4 },
  ],
  null,
  2,
);

const app = document.getElementById("app")!;
const problems = h("div", { class: "problems", role: "alert", "aria-live": "assertive" });
const connectionStatus = h("span", { class: "status status-closed", id: "connection-status", role: "status" }, "Not connected");
const gatewayLabel = h("span", { class: "gateway-label" });
const frameList = h("div", { class: "frame-list", id: "frames" });
const frameCount = h("span", { class: "count" }, "0 frames");
const frames = new FrameLog(frameList);
const threadList = h("ul", { class: "thread-list", id: "threads", "aria-label": "Threads seen this session" });
const turnList = h("ul", { class: "turn-list", "aria-label": "Turns of the thread" });
const turnArea = h("div", { class: "turn-area", id: "turn" });
const inspectArea = h("div", { class: "inspect-area", id: "inspect-output" });
const threads = new Map<string, ThreadEntry>();
const views = new Map<string, TurnView>();
const timelines = new Map<string, TimelineState>();
let connection: GatewayConnection | undefined;
let selectedThread: string | undefined;
let selectedTurn: string | undefined;
let info: InspectorInfo = { gateway: null, choosable: false, problem: null };

/** Where the page keeps the token: sessionStorage is this origin's alone (its port included), unlike a cookie. */
const TOKEN_KEY = "turnspec-inspector-token";

/**
 * The one-time token of the printed address: taken from its fragment (`#token=…`, never
 * sent to a server) or, for an address of an earlier version, its query, then out of the
 * address bar and into this tab's sessionStorage, where a reload finds it again.
 */
function pageToken(): string {
  const given = new URLSearchParams(location.hash.slice(1)).get("token") ?? new URLSearchParams(location.search).get("token");
  if (given !== null) {
    sessionStorage.setItem(TOKEN_KEY, given);
    history.replaceState(null, "", "/");
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}
const inspectorToken = pageToken();
const authorization = { Authorization: `Bearer ${inspectorToken}` };

function problem(message: string): void {
  problems.appendChild(
    h(
      "p",
      {},
      message,
      " ",
      h("button", { type: "button", class: "dismiss", onclick: (e) => (e.target as HTMLElement).parentElement?.remove() }, "Dismiss"),
    ),
  );
}

function setStatus(state: "connected" | "reconnecting" | "closed" | "connecting", text: string): void {
  connectionStatus.className = `status status-${state}`;
  connectionStatus.dataset.state = state;
  connectionStatus.textContent = text;
}

async function readInfo(): Promise<InspectorInfo> {
  const response = await fetch("/api/info", { headers: authorization });
  if (!response.ok) throw new Error(`the inspector's server answered ${response.status}: ${(await response.text()).trim()}`);
  return (await response.json()) as InspectorInfo;
}

function client(): ProtocolClient {
  if (!connection || connection.status === "closed") throw new Error("not connected to a gateway: connect first");
  return connection.client;
}

/** Notes the threads that notifications name, and feeds the work notifications to the loaded work timelines. */
function watch(c: ProtocolClient): void {
  c.onAny((n) => {
    const params = n.params as { thread_id?: unknown; threadId?: unknown };
    const threadId =
      typeof params.thread_id === "string" ? params.thread_id : typeof params.threadId === "string" ? params.threadId : undefined;
    if (threadId !== undefined && !threads.has(threadId)) {
      threads.set(threadId, { thread: undefined, turns: [] });
      renderThreads();
    }
    if (n.method === "turn/work/items/changed" || n.method === "turn/work/state/changed") {
      const key = `${n.params.threadId}/${n.params.turnId}`;
      const held = timelines.get(key);
      if (!held) return;
      const next = reduceTimeline(
        held,
        n.method === "turn/work/items/changed"
          ? { kind: "items_changed", notification: n.params }
          : { kind: "state_changed", notification: n.params },
      );
      timelines.set(key, next);
      if (next.staleIds.length) void refreshWork(key, next);
      else if (selectedTurn === n.params.turnId && inspectArea.dataset.showing === "work") renderWork(key);
    }
  });
}

async function connect(): Promise<void> {
  setStatus("connecting", "Connecting…");
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/gateway`;
  try {
    connection = await GatewayConnection.open({
      connect: async () =>
        frames.tap(await connectBrowserWebSocket(url, { protocols: [INSPECTOR_PROTOCOL, `${TOKEN_PROTOCOL_PREFIX}${inspectorToken}`] })),
      reconnect: { delaysMs: [200, 500, 1000, 2000], maxAttempts: 30 },
      onProtocolError: (error, frame) => frames.markDropped(frame, error.message),
    });
  } catch {
    info = await readInfo().catch(() => info);
    setStatus("closed", "Not connected");
    problem(`Cannot connect to the gateway${info.problem ? `: ${info.problem}` : "; check that it is running"}.`);
    return;
  }
  const opened = connection;
  watch(opened.client);
  setStatus("connected", "Connected");
  opened.onChange((change) => {
    if (change.type === "disconnected") {
      setStatus("reconnecting", "Reconnecting…");
      void readInfo().then(
        (i) => i.problem && problem(`The connection dropped: ${i.problem}. Reconnecting; the view is kept.`),
        () => undefined,
      );
    } else if (change.type === "reconnected") {
      watch(change.client);
      setStatus("connected", "Connected (reconnected)");
    } else {
      setStatus("closed", "Disconnected");
      if (change.error) problem(`The connection to the gateway is closed: ${change.error.message}.`);
    }
    renderConnectButton();
  });
  // Turns followed on an earlier connection go on following on this one, from the last event shown.
  for (const view of views.values()) view.follow(true);
  renderConnectButton();
}

const connectButtonSlot = h("span", {});
function renderConnectButton(): void {
  const closed = !connection || connection.status === "closed";
  replace(
    connectButtonSlot,
    closed && info.gateway ? h("button", { type: "button", id: "connect", onclick: () => void connect() }, "Connect") : null,
  );
}

function gatewayForm(): HTMLElement {
  const url = h("input", { id: "gateway-url", type: "url", placeholder: "ws://127.0.0.1:8787/", required: true, autocomplete: "off" });
  const token = h("input", { id: "gateway-token", type: "password", autocomplete: "off" });
  const error = h("p", { class: "failure", role: "alert" });
  return h(
    "form",
    {
      class: "gateway-form",
      "aria-label": "Gateway",
      onsubmit: (event) => {
        event.preventDefault();
        void (async () => {
          error.textContent = "";
          const response = await fetch("/api/target", {
            method: "POST",
            headers: { "Content-Type": "application/json", ...authorization },
            body: JSON.stringify({ url: url.value, token: token.value }),
          });
          if (!response.ok) {
            error.textContent = `Cannot use this gateway: ${(await response.text()).trim()}`;
            return;
          }
          info = await readInfo();
          gatewayLabel.textContent = info.gateway ? `gateway: ${info.gateway.label}` : "";
          await connection?.close();
          await connect();
        })().catch((e: unknown) => (error.textContent = inWords(e)));
      },
    },
    h("label", { for: "gateway-url" }, "Gateway URL"),
    url,
    h("label", { for: "gateway-token" }, "Token"),
    token,
    h("button", { type: "submit" }, "Connect"),
    error,
  );
}

function threadForm(): HTMLElement {
  const cwd = h("input", { id: "thread-cwd", type: "text", placeholder: "the gateway's own folder", autocomplete: "off" });
  const mode = h(
    "select",
    { id: "thread-mode" },
    h("option", { value: "" }, "gateway default"),
    h("option", { value: "Agent" }, "Agent"),
    h("option", { value: "Chat" }, "Chat"),
  );
  const provider = h("input", { id: "thread-provider", type: "text", placeholder: "gateway default", autocomplete: "off" });
  const openId = h("input", { id: "open-thread-id", type: "text", placeholder: "thr_…", autocomplete: "off" });
  return h(
    "div",
    {},
    h(
      "form",
      {
        "aria-label": "Start a thread",
        onsubmit: (event) => {
          event.preventDefault();
          void (async () => {
            const { thread } = await client().threadStart({
              ...(cwd.value ? { cwd: cwd.value } : {}),
              ...(mode.value ? { mode: mode.value as TurnMode } : {}),
              ...(provider.value ? { model_provider: provider.value } : {}),
            });
            addThread(thread);
            selectThread(thread.id);
          })().catch((e: unknown) => problem(`thread/start failed: ${inWords(e)}`));
        },
      },
      h("label", { for: "thread-cwd" }, "Working folder"),
      cwd,
      h("label", { for: "thread-mode" }, "Mode"),
      mode,
      h("label", { for: "thread-provider" }, "Model provider"),
      provider,
      h("button", { type: "submit", id: "start-thread" }, "Start thread"),
    ),
    h(
      "form",
      {
        "aria-label": "Open a thread",
        onsubmit: (event) => {
          event.preventDefault();
          void (async () => {
            const { thread } = await client().threadGet({ thread_id: openId.value.trim() });
            addThread(thread);
            selectThread(thread.id);
          })().catch((e: unknown) => problem(`thread/get failed: ${inWords(e)}`));
        },
      },
      h("label", { for: "open-thread-id" }, "Open a thread by id"),
      openId,
      h("button", { type: "submit" }, "Open"),
    ),
  );
}

function addThread(thread: Thread): void {
  const held = threads.get(thread.id);
  if (held) held.thread = thread;
  else threads.set(thread.id, { thread, turns: [] });
  renderThreads();
}

function selectThread(id: string): void {
  selectedThread = id;
  renderThreads();
  renderComposer();
  renderTurns();
}

function renderThreads(): void {
  replace(
    threadList,
    ...[...threads].map(([id, entry]) =>
      h(
        "li",
        {},
        h(
          "button",
          {
            type: "button",
            class: id === selectedThread ? "selected" : undefined,
            "aria-pressed": String(id === selectedThread),
            "data-thread-id": id,
            onclick: () => selectThread(id),
          },
          id,
          entry.thread
            ? h("small", {}, ` ${entry.thread.mode}${entry.thread.model_provider ? ` · ${entry.thread.model_provider}` : ""}`)
            : h("small", {}, " (seen in a notification)"),
        ),
      ),
    ),
  );
}

const composerSlot = h("div", { class: "composer-slot" });

function renderComposer(): void {
  const entry = selectedThread === undefined ? undefined : threads.get(selectedThread);
  if (!entry) {
    replace(composerSlot, h("p", { class: "hint" }, "Start or pick a thread to compose a turn."));
    return;
  }
  const text = h("textarea", { id: "turn-text", rows: 3 }, "Hello");
  const mode = h(
    "select",
    { id: "turn-mode" },
    h("option", { value: "" }, "thread default"),
    h("option", { value: "Agent" }, "Agent"),
    h("option", { value: "Chat" }, "Chat"),
  );
  const profile = h(
    "select",
    { id: "turn-profile" },
    h("option", { value: "" }, "gateway default (full_access)"),
    h("option", { value: "full_access" }, "full_access"),
    h("option", { value: "auto_accept_edits" }, "auto_accept_edits"),
    h("option", { value: "supervised" }, "supervised"),
  );
  const capabilities = h("textarea", {
    id: "turn-capabilities",
    rows: 2,
    placeholder: '[{"kind": "skill", "slug": "…", "sourceKind": "…"}]',
  });
  const provider = h("input", { id: "turn-provider", type: "text", placeholder: "thread default", autocomplete: "off" });
  // The scripted model reads its script from the turn's text: {"script": [step, …]}.
  const threadProvider = entry.thread?.model_provider;
  const mayBeScripted = threadProvider === undefined || threadProvider === "scripted";
  const useScript = h("input", { id: "turn-use-script", type: "checkbox", checked: mayBeScripted });
  const script = h("textarea", { id: "turn-script", rows: 8, spellcheck: "false" }, DEFAULT_SCRIPT);
  const error = h("p", { class: "failure", role: "alert", id: "composer-error" });
  const scriptBox = h(
    "fieldset",
    { class: "script", hidden: !mayBeScripted },
    h("legend", {}, "Scripted model"),
    h(
      "p",
      { class: "hint" },
      "The scripted provider (the reference gateway's default without a model configured) plays these steps: say, tool, tools, fail; see runtime/providers/scripted.ts.",
    ),
    h("label", {}, useScript, " Send this script as the turn's text"),
    h("label", { for: "turn-script" }, "Script steps (a JSON array)"),
    script,
  );
  provider.addEventListener(
    "input",
    () => (scriptBox.hidden = !(provider.value === "scripted" || (provider.value === "" && mayBeScripted))),
  );
  const form = h(
    "form",
    {
      class: "composer",
      "aria-label": "Compose a turn",
      onsubmit: (event) => {
        event.preventDefault();
        error.textContent = "";
        let params: TurnStartParams;
        try {
          params = turnParams(entry, {
            text: text.value,
            mode: mode.value,
            profile: profile.value,
            capabilities: capabilities.value,
            provider: provider.value,
            script: !scriptBox.hidden && useScript.checked ? script.value : undefined,
          });
        } catch (e) {
          error.textContent = inWords(e);
          return;
        }
        void startTurn(params).catch((e: unknown) => (error.textContent = `turn/start failed: ${inWords(e)}`));
      },
    },
    h("label", { for: "turn-text" }, "Message"),
    text,
    h(
      "div",
      { class: "row" },
      h("label", { for: "turn-mode" }, "Mode"),
      mode,
      h("label", { for: "turn-profile" }, "Permission profile"),
      profile,
      h("label", { for: "turn-provider" }, "Model provider"),
      provider,
    ),
    h("label", { for: "turn-capabilities" }, "Capabilities (optional JSON array of TurnCapability)"),
    capabilities,
    scriptBox,
    h("button", { type: "submit", id: "start-turn" }, "Start turn"),
    error,
  );
  replace(composerSlot, form);
}

function turnParams(
  entry: ThreadEntry,
  form: { text: string; mode: string; profile: string; capabilities: string; provider: string; script: string | undefined },
): TurnStartParams {
  let text = form.text;
  if (form.script !== undefined) {
    let steps: unknown;
    try {
      steps = JSON.parse(form.script);
    } catch (e) {
      throw new Error(`The script is not JSON: ${inWords(e)}`);
    }
    if (!Array.isArray(steps)) throw new Error('The script must be a JSON array of steps, e.g. [{"say": "Hello"}]');
    text = JSON.stringify({ script: steps });
  }
  let capabilities: TurnCapability[] | undefined;
  if (form.capabilities.trim() !== "") {
    try {
      capabilities = JSON.parse(form.capabilities) as TurnCapability[];
    } catch (e) {
      throw new Error(`The capabilities are not JSON: ${inWords(e)}`);
    }
    if (!Array.isArray(capabilities)) throw new Error("The capabilities must be a JSON array");
  }
  const threadId = entry.thread?.id ?? selectedThread!;
  return {
    thread_id: threadId,
    turn_id: `turn_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`,
    input: [{ type: "text", text, textElements: [] }],
    ...(form.mode ? { mode: form.mode as TurnMode } : {}),
    ...(form.profile ? { permission_profile: { mode: form.profile as TurnPermissionMode } } : {}),
    ...(capabilities ? { capabilities } : {}),
    ...(form.provider ? { model_provider: form.provider } : {}),
  };
}

async function startTurn(params: TurnStartParams): Promise<void> {
  const view = new TurnView(() => connection!, params.thread_id, params.turn_id, problem);
  // Followed before turn/start is sent, so that no notification of the turn can be missed.
  view.follow(false);
  try {
    await client().turnStart(params);
  } catch (error) {
    view.stop();
    throw error;
  }
  views.set(params.turn_id, view);
  threads.get(params.thread_id)?.turns.push(params.turn_id);
  selectedTurn = params.turn_id;
  renderTurns();
}

function renderTurns(): void {
  const entry = selectedThread === undefined ? undefined : threads.get(selectedThread);
  replace(
    turnList,
    ...(entry?.turns ?? []).map((id) =>
      h(
        "li",
        {},
        h(
          "button",
          {
            type: "button",
            class: id === selectedTurn ? "selected" : undefined,
            "aria-pressed": String(id === selectedTurn),
            onclick: () => ((selectedTurn = id), renderTurns()),
          },
          id,
        ),
      ),
    ),
  );
  const view = selectedTurn === undefined ? undefined : views.get(selectedTurn);
  replace(turnArea, view ? view.element : h("p", { class: "hint" }, "No turn yet."));
  replace(inspectArea);
  delete inspectArea.dataset.showing;
}

function inspectButtons(): HTMLElement {
  const need = (): { threadId: string; turnId: string } => {
    if (selectedThread === undefined || selectedTurn === undefined) throw new Error("pick a turn first");
    return { threadId: selectedThread, turnId: selectedTurn };
  };
  const run = (what: string, work: () => Promise<void>) => () =>
    void work().catch((e: unknown) => problem(`${what} failed: ${inWords(e)}`));
  return h(
    "div",
    { class: "actions", role: "group", "aria-label": "Inspect the turn" },
    h("button", { type: "button", id: "show-items", onclick: run("turn/items", () => showItems(need(), 0)) }, "turn/items"),
    h(
      "button",
      { type: "button", id: "show-work", onclick: run("turn/work/page", () => loadWork(need(), { kind: "newest" })) },
      "Work pages",
    ),
    h("button", { type: "button", id: "show-routes", onclick: run("agent/route/list", () => showRoutes()) }, "Routes of the thread"),
  );
}

async function showItems(at: { threadId: string; turnId: string }, after: number): Promise<void> {
  const page = await client().turnItems({ thread_id: at.threadId, turn_id: at.turnId, after_sequence: after, limit: 100 });
  const last = page.events.at(-1)?.sequence ?? after;
  inspectArea.dataset.showing = "items";
  replace(
    inspectArea,
    h("h3", {}, `turn/items of ${at.turnId}: events ${after + 1}…${last} of ${page.last_sequence}`),
    h(
      "ul",
      { class: "events" },
      ...page.events.map((e) => h("li", {}, h("details", {}, h("summary", {}, `${e.sequence} ${e.method}`), json(e.params)))),
    ),
    last < page.last_sequence
      ? h(
          "button",
          { type: "button", onclick: () => void showItems(at, last).catch((e: unknown) => problem(`turn/items failed: ${inWords(e)}`)) },
          "Next events",
        )
      : null,
  );
}

async function loadWork(at: { threadId: string; turnId: string }, anchor: TurnWorkPageAnchor): Promise<void> {
  const key = `${at.threadId}/${at.turnId}`;
  const response = await client().turnWorkPage({ threadId: at.threadId, turnId: at.turnId, anchor, limit: 10 });
  timelines.set(key, reduceTimeline(timelines.get(key) ?? emptyTimeline(at.threadId, at.turnId), { kind: "page", response }));
  inspectArea.dataset.showing = "work";
  renderWork(key);
}

async function refreshWork(key: string, state: TimelineState): Promise<void> {
  try {
    const response = await client().turnWorkItemsGet({ threadId: state.threadId, turnId: state.turnId, workItemIds: [...state.staleIds] });
    timelines.set(key, reduceTimeline(timelines.get(key)!, { kind: "items", response }));
    if (inspectArea.dataset.showing === "work" && selectedTurn === state.turnId) renderWork(key);
  } catch (e) {
    problem(`turn/work/items/get failed: ${inWords(e)}`);
  }
}

function renderWork(key: string): void {
  const state = timelines.get(key)!;
  const at = { threadId: state.threadId, turnId: state.turnId };
  const page = state.page;
  const go = (anchor: TurnWorkPageAnchor) => () =>
    void loadWork(at, anchor).catch((e: unknown) => problem(`turn/work/page failed: ${inWords(e)}`));
  replace(
    inspectArea,
    h(
      "h3",
      {},
      `Work of ${state.turnId}${state.work ? `: ${state.work.counts.total} items, ${state.work.counts.inProgress} in progress, ${state.work.counts.completed} completed, ${state.work.counts.failed} failed` : ""}`,
    ),
    state.needsReload ? h("p", { class: "failure" }, "The work projection changed version: load the newest page again.") : null,
    h(
      "table",
      { class: "work" },
      h(
        "thead",
        {},
        h("tr", {}, h("th", {}, "Order"), h("th", {}, "Item"), h("th", {}, "Type"), h("th", {}, "Status"), h("th", {}, "Source sequence")),
      ),
      h(
        "tbody",
        {},
        ...timelineRows(state).map((row) =>
          h(
            "tr",
            { "data-work-item": row.workItemId },
            h("td", {}, row.orderKey),
            h("td", {}, row.workItemId),
            h("td", {}, row.itemType),
            h("td", {}, row.status),
            h("td", {}, row.sourceSequence),
          ),
        ),
      ),
    ),
    h(
      "div",
      { class: "actions" },
      h(
        "button",
        {
          type: "button",
          disabled: !page?.hasMoreBefore || !page.beforeCursor,
          onclick: page?.beforeCursor ? go({ kind: "before", cursor: page.beforeCursor }) : undefined,
        },
        "Older",
      ),
      h(
        "button",
        {
          type: "button",
          disabled: !page?.hasMoreAfter || !page.afterCursor,
          onclick: page?.afterCursor ? go({ kind: "after", cursor: page.afterCursor }) : undefined,
        },
        "Newer",
      ),
      h("button", { type: "button", onclick: go({ kind: "newest" }) }, "Newest"),
    ),
  );
}

async function showRoutes(): Promise<void> {
  if (selectedThread === undefined) throw new Error("pick a thread first");
  const turns = threads.get(selectedThread)?.turns ?? [];
  // Routes are listed by the execution that delegates: each turn of the thread is one.
  const sections: HTMLElement[] = [];
  for (const turnId of turns) {
    const routes = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<ProtocolClient["agentRouteList"]>> = await client().agentRouteList({
        source_execution_id: turnId,
        ...(cursor === null ? {} : { cursor }),
      });
      routes.push(...page.routes);
      cursor = page.next_cursor;
    } while (cursor !== null);
    sections.push(
      h(
        "section",
        {},
        h("h4", {}, `From turn ${turnId}: ${routes.length} route${routes.length === 1 ? "" : "s"}`),
        ...routes.map((r) => h("details", {}, h("summary", {}, `${r.route_id} · ${r.kind} · ${r.status}`), json(r))),
      ),
    );
  }
  inspectArea.dataset.showing = "routes";
  replace(
    inspectArea,
    h("h3", {}, `Routes of thread ${selectedThread}`),
    ...(sections.length ? sections : [h("p", { class: "hint" }, "No turns of this thread were started this session.")]),
  );
}

function exportSession(): void {
  const { text, skipped } = frames.exportJsonLines();
  const href = URL.createObjectURL(new Blob([text], { type: "application/jsonl" }));
  const link = h("a", { href, download: `turnspec-session-${new Date().toISOString().replaceAll(":", "-").slice(0, 19)}.jsonl` });
  document.body.appendChild(link);
  link.click();
  link.remove();
  // The download has its own copy once it started.
  setTimeout(() => URL.revokeObjectURL(href), 60_000);
  if (skipped)
    problem(`${skipped} frame${skipped === 1 ? " was" : "s were"} not JSON and ${skipped === 1 ? "is" : "are"} not in the export.`);
}

async function main(): Promise<void> {
  frames.onChange(() => (frameCount.textContent = `${frames.records.length} frame${frames.records.length === 1 ? "" : "s"}`));
  try {
    info = await readInfo();
  } catch (e) {
    problem(inWords(e));
  }
  gatewayLabel.textContent = info.gateway ? `gateway: ${info.gateway.label}` : "no gateway yet";
  replace(
    app,
    h(
      "header",
      {},
      h("h1", {}, "turnspec inspect"),
      connectionStatus,
      gatewayLabel,
      connectButtonSlot,
      h("button", { type: "button", id: "export", onclick: exportSession }, "Export session (JSON lines)"),
    ),
    problems,
    info.choosable ? gatewayForm() : null,
    h(
      "main",
      {},
      h(
        "section",
        { class: "pane threads", "aria-labelledby": "threads-title" },
        h("h2", { id: "threads-title" }, "Threads"),
        threadList,
        threadForm(),
      ),
      h(
        "section",
        { class: "pane work", "aria-labelledby": "turn-title" },
        h("h2", { id: "turn-title" }, "Turn"),
        composerSlot,
        turnList,
        turnArea,
        inspectButtons(),
        inspectArea,
      ),
      h(
        "section",
        { class: "pane frames", "aria-labelledby": "frames-title" },
        h("h2", { id: "frames-title" }, "Frames"),
        " ",
        frameCount,
        frameList,
      ),
    ),
  );
  renderComposer();
  renderTurns();
  if (info.gateway) await connect();
}

void main();
