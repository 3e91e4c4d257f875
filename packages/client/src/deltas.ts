/**
 * Delta accumulation: a turn's items rebuilt from `item/started`, the delta notifications,
 * `item/updated` and `item/completed`, so a UI can show an answer or a command's output
 * while it grows. Which item field a delta stream extends is stated once, by the
 * ItemDeltaStream schema (`x-appends-to-item-field`, in the generated `extensions`).
 *
 * Pure and serialisable: the state is plain JSON, every step returns a new state, and a
 * notification at or below the last sequence applied to its item is ignored, so replaying
 * or duplicating notifications (after a reconnect, say) never appends a delta twice.
 */
import { extensions, notifications, type AnyNotification } from "@turnspec/protocol/registry";
import { appendToField } from "@turnspec/rpc";
import type { ItemDeltaStream, TurnItem } from "@turnspec/protocol/types";

const DELTA_FIELD = extensions.ItemDeltaStream["x-appends-to-item-field"];

/** The item fields that delta streams extend. */
export type DeltaField = (typeof DELTA_FIELD)[keyof typeof DELTA_FIELD];

/** The field `stream` appends to, or undefined for a stream with no item field (`generic`). */
export function deltaField(stream: ItemDeltaStream): DeltaField | undefined {
  return (DELTA_FIELD as Partial<Record<ItemDeltaStream, DeltaField>>)[stream];
}

/** The item with `delta` appended to the field of `stream`; the item itself when the stream has no field. */
export function applyDelta(item: TurnItem, stream: ItemDeltaStream, delta: string): TurnItem {
  const field = deltaField(stream);
  return field ? appendToField(item, field, delta) : item;
}

export interface AccumulatedItems {
  /** Every item by id, in its latest state. */
  readonly items: Readonly<Record<string, TurnItem>>;
  /** Item ids in the order the items opened. */
  readonly order: readonly string[];
  /** Per item, the sequence of the last notification applied to it. */
  readonly applied: Readonly<Record<string, number>>;
}

export const emptyItems: AccumulatedItems = { items: {}, order: [], applied: {} };

/** The notifications that carry a delta: those whose params are an ItemDeltaNotification, as the registry says. */
const DELTA_METHODS: ReadonlySet<string> = new Set(
  Object.values(notifications)
    .filter((n) => n.params === "ItemDeltaNotification")
    .map((n) => n.name),
);

/** Folds one notification into the items; notifications that are not about an item leave them as they are. */
export function accumulateItem(state: AccumulatedItems, notification: AnyNotification): AccumulatedItems {
  const { method, params } = notification;
  if (method !== "item/started" && method !== "item/updated" && method !== "item/completed" && !DELTA_METHODS.has(method)) return state;
  const { item_id: id, sequence } = params as { item_id: string; sequence: number };
  if (sequence <= (state.applied[id] ?? 0)) return state;
  const held = state.items[id];
  let next: TurnItem | undefined;
  if ("item" in params) next = params.item;
  else if (held && "stream" in params) next = applyDelta(held, params.stream, params.delta);
  // A delta for an item that never opened has nothing to extend.
  if (!next) return state;
  return {
    items: { ...state.items, [id]: next },
    order: held ? state.order : [...state.order, id],
    applied: { ...state.applied, [id]: sequence },
  };
}

/** Every item of `notifications`, in the order they opened. */
export function accumulateItems(notifications: Iterable<AnyNotification>): TurnItem[] {
  let state = emptyItems;
  for (const n of notifications) state = accumulateItem(state, n);
  return state.order.map((id) => state.items[id]!);
}
