/**
 * The engine's sets of notifications come from the schemas (their `x-` keywords and the
 * ordering rules), and the keywords say what the params schemas themselves show: a
 * notification whose params carry a whole Turn or TurnItem is a snapshot, and every
 * snapshot changes the turn's work view.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { extensions, notifications } from "../../generated/registry.js";
import { ITEM_SNAPSHOTS, notificationsDeclaring, TURN_SNAPSHOTS } from "../../packages/gateway/src/log/fold.js";

interface ParamsSchema {
  readonly title: string;
  readonly required?: readonly string[];
  readonly properties?: Record<string, { $ref?: string }>;
}

const protocol = JSON.parse(readFileSync("schemas/protocol.json", "utf8")) as {
  notifications: { name: string; params: { $ref: string } }[];
};
const paramsOf = (name: string): ParamsSchema => {
  const entry = protocol.notifications.find((n) => n.name === name)!;
  return JSON.parse(readFileSync(`schemas/${entry.params.$ref}`, "utf8")) as ParamsSchema;
};
/** The notifications whose params require `field` as a reference to `file`. */
const carrying = (field: string, file: string) =>
  protocol.notifications
    .map((n) => n.name)
    .filter((name) => {
      const schema = paramsOf(name);
      return schema.required?.includes(field) && schema.properties?.[field]?.$ref === file;
    })
    .sort();

describe("protocol facts the engine reads from the schemas", () => {
  it("counts as a turn snapshot exactly the notifications whose params require the whole Turn", () => {
    expect([...TURN_SNAPSHOTS].sort()).toEqual(carrying("turn", "turn.json"));
    expect(TURN_SNAPSHOTS).toContain("turn/blocked");
  });

  it("counts as an item snapshot exactly the notifications whose params require the whole TurnItem", () => {
    expect([...ITEM_SNAPSHOTS].sort()).toEqual(carrying("item", "turn_item.json"));
  });

  it("has every snapshot change the work view, and a delta change no view", () => {
    const work = notificationsDeclaring("x-changes-views", (v) => Array.isArray(v) && v.includes("work"));
    for (const name of [...TURN_SNAPSHOTS, ...ITEM_SNAPSHOTS]) expect(work, name).toContain(name);
    expect(work).not.toContain("item/agent_message/delta");
  });

  it("reads a keyword only where a schema declares it", () => {
    expect(notificationsDeclaring("x-no-such-keyword", () => true).size).toBe(0);
    const named = notificationsDeclaring("x-carries-snapshot", () => true);
    for (const name of named) expect(Object.keys(notifications)).toContain(name);
  });

  it("sends each delta stream as a notification whose params are an item delta, and covers every such notification", () => {
    const sentAs = extensions.ItemDeltaStream["x-sent-as"];
    const deltaNotifications = protocol.notifications.filter((n) => n.params.$ref === "item_delta_notification.json").map((n) => n.name);
    expect([...new Set(Object.values(sentAs))].sort()).toEqual([...deltaNotifications].sort());
    for (const stream of Object.keys(sentAs)) expect(Object.keys(extensions.ItemDeltaStream["x-appends-to-item-field"])).toContain(stream);
  });
});
