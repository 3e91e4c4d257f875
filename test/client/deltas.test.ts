/**
 * Delta accumulation: items rebuilt from their deltas equal the content of their
 * item/completed, for any split into chunks, any interleaving of items and any
 * duplication of notifications; and against the reference gateway's own stream.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { accumulateItem, emptyItems, type AccumulatedItems } from "../../packages/client/src/index.js";
import type { AnyNotification } from "../../generated/registry.js";
import type { ItemDeltaStream, TurnItem } from "../../generated/types.js";
import { script, startHarness, text } from "../gateway/harness.js";

type DeltaMethod =
  "item/agent_message/delta" | "item/command_execution/output_delta" | "item/file_change/output_delta" | "item/tool/progress";

/** One kind of item, the streams that extend it, and the item with those fields set. */
interface Kind {
  readonly streams: readonly { stream: ItemDeltaStream; method: DeltaMethod; field: string }[];
  make(id: string, status: "in_progress" | "completed", fields: Record<string, string>): TurnItem;
}

const KINDS: readonly Kind[] = [
  {
    streams: [{ stream: "agent_message", method: "item/agent_message/delta", field: "text" }],
    make: (id, status, f) => ({ type: "agentMessage", id, status, text: f.text ?? "" }),
  },
  {
    streams: [
      { stream: "stdout", method: "item/command_execution/output_delta", field: "stdout" },
      { stream: "stderr", method: "item/command_execution/output_delta", field: "stderr" },
    ],
    make: (id, status, f) => ({ type: "commandExecution", id, status, command: "make", cwd: "/w", arguments: {}, ...f }),
  },
  {
    streams: [{ stream: "file_change", method: "item/file_change/output_delta", field: "output" }],
    make: (id, status, f) => ({ type: "fileChange", id, status, path: "/w/a.txt", change_kind: "modify", arguments: {}, ...f }),
  },
  {
    streams: [{ stream: "tool_progress", method: "item/tool/progress", field: "progress" }],
    make: (id, status, f) => ({ type: "dynamicToolCall", id, status, tool_name: "search", arguments: {}, ...f }),
  },
];

interface Plan {
  readonly kind: Kind;
  /** Per stream, the chunks its text arrives in. */
  readonly chunks: readonly (readonly string[])[];
}

const planArb: fc.Arbitrary<Plan> = fc.constantFrom(...KINDS).chain((kind) =>
  fc.record({
    kind: fc.constant(kind),
    chunks: fc.tuple(...kind.streams.map(() => fc.array(fc.string({ unit: "grapheme", maxLength: 6 }), { maxLength: 6 }))),
  }),
);

/** The notifications of the planned items, interleaved by `schedule`, each item's own in order. */
function notificationsOf(
  plans: readonly Plan[],
  schedule: readonly number[],
): { notifications: AnyNotification[]; finals: Map<string, TurnItem> } {
  const finals = new Map<string, TurnItem>();
  const queues = plans.map((plan, index) => {
    const id = `item_${index}`;
    const final: Record<string, string> = {};
    plan.kind.streams.forEach((s, i) => (final[s.field] = plan.chunks[i]!.join("")));
    finals.set(id, plan.kind.make(id, "completed", final));
    const steps: ((sequence: number) => AnyNotification)[] = [
      (sequence) => ({
        method: "item/started",
        params: { thread_id: "thr", turn_id: "trn", sequence, item_id: id, item: plan.kind.make(id, "in_progress", {}) },
      }),
    ];
    plan.kind.streams.forEach((s, i) => {
      for (const delta of plan.chunks[i]!) {
        steps.push(
          (sequence) =>
            ({
              method: s.method,
              params: { thread_id: "thr", turn_id: "trn", sequence, item_id: id, stream: s.stream, delta },
            }) as AnyNotification,
        );
      }
    });
    steps.push((sequence) => ({
      method: "item/completed",
      params: { thread_id: "thr", turn_id: "trn", sequence, item_id: id, item: finals.get(id)! },
    }));
    return steps;
  });
  const notifications: AnyNotification[] = [];
  let turn = 0;
  for (;;) {
    const open = queues.filter((q) => q.length > 0);
    if (open.length === 0) break;
    const queue = open[(schedule[turn++ % Math.max(schedule.length, 1)] ?? 0) % open.length]!;
    notifications.push(queue.shift()!(notifications.length + 1));
  }
  return { notifications, finals };
}

/** For every item/completed, the accumulated item just before it must already hold the final delta fields. */
function checkAgainstCompleted(notifications: readonly AnyNotification[], fieldsOf: (item: TurnItem) => string[]): AccumulatedItems {
  let state = emptyItems;
  for (const n of notifications) {
    if (
      n.method === "item/completed" &&
      state.applied[n.params.item_id] !== undefined &&
      n.params.sequence > state.applied[n.params.item_id]!
    ) {
      const built = state.items[n.params.item_id] as unknown as Record<string, unknown>;
      const final = n.params.item as unknown as Record<string, unknown>;
      for (const field of fieldsOf(n.params.item)) expect(built[field] ?? "", `${n.params.item_id}.${field}`).toBe(final[field] ?? "");
    }
    state = accumulateItem(state, n);
  }
  return state;
}

const fieldsOfKind = (item: TurnItem) =>
  KINDS.find((k) => k.make("x", "completed", {}).type === item.type)?.streams.map((s) => s.field) ?? [];

describe("delta accumulation", () => {
  it("rebuilds every item's fields from its deltas, for any chunking and interleaving", () => {
    fc.assert(
      fc.property(fc.array(planArb, { minLength: 1, maxLength: 5 }), fc.array(fc.nat(), { maxLength: 40 }), (plans, schedule) => {
        const { notifications, finals } = notificationsOf(plans, schedule);
        const state = checkAgainstCompleted(notifications, fieldsOfKind);
        expect(state.order).toEqual(
          [...finals.keys()]
            .filter((id) => notifications.some((n) => n.method === "item/started" && n.params.item_id === id))
            .sort((a, b) => firstSeen(notifications, a) - firstSeen(notifications, b)),
        );
        for (const [id, final] of finals) expect(state.items[id]).toEqual(final);
      }),
    );
  });

  it("ignores replayed and duplicated notifications: a delta is never appended twice", () => {
    fc.assert(
      fc.property(
        fc.array(planArb, { minLength: 1, maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 20 }),
        (plans, schedule, copies) => {
          const { notifications, finals } = notificationsOf(plans, schedule);
          // Each copy re-sends an earlier notification at a later point, as a replay after a reconnect would.
          const delivered = [...notifications];
          for (const [from, at] of copies) {
            const original = notifications[from % notifications.length]!;
            const after = delivered.indexOf(original) + 1;
            delivered.splice(after + (at % (delivered.length - after + 1)), 0, original);
          }
          const state = checkAgainstCompleted(delivered, fieldsOfKind);
          for (const [id, final] of finals) expect(state.items[id]).toEqual(final);
        },
      ),
    );
  });

  it("agrees with the reference gateway: each item/completed equals what its deltas built", async () => {
    const h = await startHarness();
    try {
      const threadId = await h.thread();
      const input = text(
        script(
          { tool: "shell", args: { command: "printf 'one\\ntwo\\n'; printf 'err\\n' >&2" } },
          { tool: "write_file", args: { path: "out.txt", content: "hello" } },
          { say: "All of it, in pieces.", chunks: 5 },
        ),
      );
      const terminal = await h.runTurn({ thread_id: threadId, turn_id: "trn_deltas", input });
      expect(terminal.method).toBe("turn/completed");
      const ofTurn = h.received.filter((n) => "turn_id" in n.params && n.params.turn_id === "trn_deltas");
      expect(ofTurn.filter((n) => n.method.endsWith("delta")).length).toBeGreaterThan(5);
      const state = checkAgainstCompleted(ofTurn, (item) => ["text", "stdout", "stderr", "output", "progress"].filter((f) => f in item));
      const command = Object.values(state.items).find((i) => i.type === "commandExecution");
      expect(command).toMatchObject({ stdout: "one\ntwo\n", stderr: "err\n" });
    } finally {
      await h.close();
    }
  });
});

function firstSeen(notifications: readonly AnyNotification[], id: string): number {
  return notifications.findIndex((n) => "item_id" in n.params && n.params.item_id === id);
}
