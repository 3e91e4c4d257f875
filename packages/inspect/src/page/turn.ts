/**
 * One turn on the page: its live timeline, folded with the client SDK's reducers from the
 * turn's notifications as the SDK's turn feed delivers them (each once, in sequence order,
 * caught up from turn/items after a reconnect): the items with their streamed text and
 * output (deltas.ts, events.ts), the domain status (status.ts), approvals and questions
 * answered inline with the tokens the gateway sent, and the notices of execution windows,
 * retries and recovery.
 */
import {
  emptyItems,
  followTurn,
  foldTurnStatus,
  initialTurnStatus,
  streamEventsOf,
  toolName,
  walletLinkCard,
  walletRevokeCard,
  walletUpdateCard,
  MASKED_CODE,
  wireStatus,
  type Card,
  type AccumulatedItems,
  type ApprovalAnswer,
  type GatewayConnection,
  type TurnFeed,
  type TurnNotification,
  type TurnStatusState,
} from "@turnspec/client/browser";
import type { TurnItem, TurnPermissionApprovalRequest, TurnQuestion } from "@turnspec/protocol/types";
import { h, inWords, json, replace } from "./dom.js";

const NOTICE_PREFIXES = [
  "turn/execution_window/",
  "item/timeout_detected",
  "item/recovery_",
  "item/retry_",
  "item/tool/retry_",
  "turn/tool_loop/",
  "context/",
  "turn/handoff/",
  "turn/blocked",
  "turn/failed",
];

interface Approval {
  readonly request: TurnPermissionApprovalRequest;
  respond(resolution: ApprovalAnswer): Promise<unknown>;
  resolution?: string;
  error?: string;
}

interface Question {
  readonly question: TurnQuestion;
  answer(optionId: string): Promise<unknown>;
  resolution?: string;
  optionId?: string;
  error?: string;
}

type Entry =
  | { readonly kind: "card"; readonly label: string; readonly card: Card }
  | { readonly kind: "item"; readonly id: string }
  | { readonly kind: "approval"; readonly id: string }
  | { readonly kind: "question"; readonly id: string }
  | { readonly kind: "notice"; readonly text: string; readonly sequence: number };

export class TurnView {
  readonly element: HTMLElement;
  private items: AccumulatedItems = emptyItems;
  private status: TurnStatusState = initialTurnStatus;
  private readonly entries: Entry[] = [];
  private readonly approvals = new Map<string, Approval>();
  private readonly questions = new Map<string, Question>();
  private recoveryJobId: string | undefined;
  private feed: TurnFeed | undefined;
  private problem: string | undefined;
  private readonly timeline = h("ol", { class: "timeline", "aria-label": "Timeline" });
  private readonly header = h("div", { class: "turn-header" });

  constructor(
    private readonly connection: () => GatewayConnection,
    readonly threadId: string,
    readonly turnId: string,
    private readonly onProblem: (message: string) => void,
  ) {
    this.element = h("section", { class: "turn", "data-turn-id": turnId, "aria-label": `Turn ${turnId}` }, this.header, this.timeline);
    this.render();
  }

  get lastSequence(): number {
    return this.feed?.lastSequence ?? 0;
  }

  /** Follows the turn from the sequence after the last one shown; `catchUp` false when the caller starts the turn itself. */
  follow(catchUp: boolean): void {
    // An ended turn has nothing more to deliver.
    if (["succeeded", "failed", "cancelled"].includes(this.status.status)) return;
    this.feed?.stop();
    this.problem = undefined;
    const after = this.status.lastSequence;
    this.feed = followTurn(
      this.connection(),
      this.threadId,
      this.turnId,
      {
        event: (n) => this.apply(n),
        error: (error) => {
          this.problem = error.message;
          this.render();
        },
      },
      { afterSequence: after, catchUp },
    );
  }

  stop(): void {
    this.feed?.stop();
  }

  private apply(n: TurnNotification): void {
    const step = streamEventsOf(this.items, n, {
      respond: (request, resolution) =>
        this.connection().client.turnPermissionRequestRespond({
          request_id: request.request_id,
          resolution,
          // Carried back exactly as the gateway sent it: it is signed over the request.
          ...(request.resolve_token === undefined ? {} : { resolve_token: request.resolve_token }),
        }),
      answer: (threadId, turnId, question, optionId) =>
        this.connection().client.turnQuestionRespond({
          thread_id: threadId,
          turn_id: turnId,
          call_id: question.call_id,
          index: question.index,
          option_id: optionId,
          answer_token: question.answer_token,
        }),
    });
    const before = new Set(this.items.order);
    this.items = step.items;
    this.status = foldTurnStatus(this.status, n);
    for (const id of this.items.order) if (!before.has(id)) this.entries.push({ kind: "item", id });
    for (const event of step.events) {
      switch (event.type) {
        case "approval_pending":
          this.approvals.set(event.request.request_id, { request: event.request, respond: event.respond });
          this.entries.push({ kind: "approval", id: event.request.request_id });
          break;
        case "approval_resolved": {
          const approval = this.approvals.get(event.requestId);
          if (approval) approval.resolution = event.resolution;
          break;
        }
        case "question_pending": {
          const key = `${event.question.call_id}#${event.question.index}`;
          if (!this.questions.has(key)) this.entries.push({ kind: "question", id: key });
          this.questions.set(key, { ...this.questions.get(key), question: event.question, answer: event.answer });
          break;
        }
        case "question_resolved": {
          const question = this.questions.get(`${event.callId}#${event.index}`);
          if (question) {
            question.resolution = event.resolution;
            if (event.optionId !== undefined) question.optionId = event.optionId;
          }
          break;
        }
        case "invite_delivery": {
          // The code is never put on the page: masked when this connection was given it.
          const code = event.redacted
            ? "redacted by the gateway (this connection was not authorised for private delivery)"
            : `${MASKED_CODE} (delivered to this connection privately, masked here)`;
          const inviter = event.inviterDisplay === "" ? "" : `, invited by ${event.inviterDisplay}`;
          this.entries.push({
            kind: "card",
            label: "Invite",
            card: { title: `Invite for ${event.targetUserId}${inviter}`, body: `Code: ${code}` },
          });
          break;
        }
        case "wallet_link_prompt":
          this.entries.push({ kind: "card", label: "Wallet", card: walletLinkCard(event) });
          break;
        case "wallet_update_prompt":
          this.entries.push({ kind: "card", label: "Wallet", card: walletUpdateCard(event) });
          break;
        case "wallet_revoke_prompt":
          this.entries.push({ kind: "card", label: "Wallet", card: walletRevokeCard(event) });
          break;
        case "blocked":
          this.recoveryJobId = event.recoveryJobId;
          break;
        default:
          break;
      }
    }
    if (NOTICE_PREFIXES.some((prefix) => n.method.startsWith(prefix)))
      this.entries.push({ kind: "notice", text: notice(n), sequence: n.params.sequence });
    this.render();
  }

  private async act(what: string, run: () => Promise<unknown>): Promise<void> {
    try {
      await run();
    } catch (error) {
      this.onProblem(`${what} failed: ${inWords(error)}`);
    }
  }

  private render(): void {
    const status = this.status;
    const active = !["succeeded", "failed", "cancelled", "blocked"].includes(status.status);
    replace(
      this.header,
      h("h3", {}, `Turn ${this.turnId}`),
      h(
        "span",
        { class: `status status-${status.status}`, "data-status": status.status, role: "status" },
        `${status.status.replaceAll("_", " ")} (${wireStatus(status)})`,
      ),
      h(
        "div",
        { class: "actions" },
        h(
          "button",
          {
            type: "button",
            disabled: !active,
            onclick: () =>
              void this.act("turn/cancel", () =>
                this.connection().client.turnCancel({
                  thread_id: this.threadId,
                  turn_id: this.turnId,
                  reason: "cancelled from the inspector",
                }),
              ),
          },
          "Cancel turn",
        ),
        h(
          "button",
          {
            type: "button",
            disabled: status.status !== "blocked",
            onclick: () =>
              void this.act("turn/resume", async () => {
                await this.connection().client.turnResume({
                  thread_id: this.threadId,
                  turn_id: this.turnId,
                  ...(this.recoveryJobId === undefined ? {} : { recovery_job_id: this.recoveryJobId }),
                });
                // A resumed turn goes on in the same log: a fresh feed picks it up from the last event shown.
                this.status = { ...this.status, status: "running" };
                this.follow(true);
              }),
          },
          "Resume turn",
        ),
      ),
      status.failure
        ? h(
            "p",
            { class: "failure", role: "alert" },
            `The turn ${status.status === "cancelled" ? "was cancelled" : "failed"}: ${status.failure.message} (${status.failure.kind})`,
          )
        : null,
      this.problem ? h("p", { class: "failure", role: "alert" }, `Following this turn stopped: ${this.problem}`) : null,
    );
    replace(this.timeline, ...this.entries.map((entry) => this.entryElement(entry)));
  }

  private entryElement(entry: Entry): HTMLElement {
    switch (entry.kind) {
      case "item":
        return itemElement(this.items.items[entry.id]!);
      case "notice":
        return h("li", { class: "entry notice" }, h("span", { class: "label" }, "Notice"), ` ${entry.text}`);
      case "card": {
        const { title, body, button } = entry.card;
        return h(
          "li",
          { class: "entry card" },
          h("span", { class: "label" }, entry.label),
          ` ${title}: ${body}`,
          ...(button ? [" ", h("a", { href: button.url, target: "_blank", rel: "noopener noreferrer" }, button.label)] : []),
        );
      }
      case "approval": {
        const approval = this.approvals.get(entry.id)!;
        const { request } = approval;
        const answer = (resolution: ApprovalAnswer) =>
          void this.act(`Answering ${request.request_id}`, async () => {
            try {
              await approval.respond(resolution);
            } catch (error) {
              approval.error = inWords(error);
              this.render();
              throw error;
            }
          });
        const open = approval.resolution === undefined;
        return h(
          "li",
          { class: `entry approval${open ? " open" : ""}`, "data-request-id": request.request_id },
          h("span", { class: "label" }, open ? "Approval needed" : "Approval"),
          ` ${request.title ?? `${request.tool_name} (${request.action})`}: ${request.reason}`,
          request.preview
            ? h("pre", { class: "output" }, request.preview.text)
            : request.args_json !== undefined
              ? h("pre", { class: "output" }, request.args_json)
              : null,
          open
            ? h(
                "div",
                { class: "actions", role: "group", "aria-label": `Answer ${request.request_id}` },
                h("button", { type: "button", class: "allow", onclick: () => answer("allow_once") }, "Allow once"),
                h("button", { type: "button", class: "allow", onclick: () => answer("allow_for_turn") }, "Allow for this turn"),
                h("button", { type: "button", class: "deny", onclick: () => answer("deny") }, "Deny"),
              )
            : h("p", { class: "resolution" }, `Resolved: ${approval.resolution}`),
          approval.error ? h("p", { class: "failure", role: "alert" }, approval.error) : null,
        );
      }
      case "question": {
        const q = this.questions.get(entry.id)!;
        const open = q.resolution === undefined;
        return h(
          "li",
          { class: `entry question${open ? " open" : ""}` },
          h("span", { class: "label" }, q.question.header),
          ` ${q.question.question}`,
          open
            ? h(
                "div",
                { class: "actions", role: "group", "aria-label": q.question.question },
                ...q.question.options.map((option) =>
                  h(
                    "button",
                    {
                      type: "button",
                      title: option.description,
                      onclick: () =>
                        void this.act("turn/question/respond", () =>
                          q.answer(option.id).catch((error: unknown) => ((q.error = inWords(error)), this.render(), Promise.reject(error))),
                        ),
                    },
                    option.label,
                  ),
                ),
              )
            : h(
                "p",
                { class: "resolution" },
                `Resolved: ${q.resolution}${q.optionId ? ` (${q.question.options.find((o) => o.id === q.optionId)?.label ?? q.optionId})` : ""}`,
              ),
          q.error ? h("p", { class: "failure", role: "alert" }, q.error) : null,
        );
      }
    }
  }
}

function itemElement(item: TurnItem): HTMLElement {
  const base = { class: `entry item item-${item.type}`, "data-item-type": item.type, "data-item-status": item.status };
  switch (item.type) {
    case "userMessage":
      return h(
        "li",
        base,
        h("span", { class: "label" }, "You"),
        " ",
        h("span", { class: "text" }, item.content.map((c) => ("text" in c ? c.text : `[${c.type}]`)).join(" ")),
      );
    case "agentMessage":
      return h("li", base, h("span", { class: "label" }, "Answer"), " ", h("span", { class: "text agent-text" }, item.text));
    case "reasoning":
      return h("li", base, h("span", { class: "label" }, "Reasoning"), " ", h("span", { class: "text" }, item.text));
    case "systemEvent":
      return h("li", base, h("span", { class: "label" }, "System"), " ", json(item));
    default: {
      const fields = item as unknown as Record<string, unknown>;
      const output = ["stdout", "stderr", "output", "progress", "tool_result"].filter(
        (k) => typeof fields[k] === "string" && fields[k] !== "",
      );
      return h(
        "li",
        base,
        h("span", { class: "label" }, `Tool ${toolName(item)}`),
        " ",
        h("span", { class: `status status-item-${item.status}` }, item.status.replaceAll("_", " ")),
        "arguments" in fields ? h("div", {}, h("h4", {}, "Arguments"), json(fields.arguments)) : null,
        ...output.map((k) => h("div", {}, h("h4", {}, k), h("pre", { class: "output" }, String(fields[k])))),
        fields.outcome !== undefined ? h("div", {}, h("h4", {}, "Outcome"), json(fields.outcome)) : null,
        fields.error !== undefined ? h("div", { class: "failure" }, h("h4", {}, "Error"), json(fields.error)) : null,
      );
    }
  }
}

/** A notice of a window, retry, recovery or the turn's end: the method and what its params say besides the ids. */
function notice(n: TurnNotification): string {
  const { thread_id: _t, turn_id: _u, sequence: _s, turn: _turn, ...rest } = n.params as unknown as Record<string, unknown>;
  const details = Object.entries(rest)
    .filter(([, v]) => v !== undefined && (typeof v !== "object" || v === null))
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join(", ");
  return `${n.method}${details ? ` (${details})` : ""}`;
}
