/**
 * The item a tool call is shown as, built as the generated TurnItem variant of its tool's
 * item type. A tool reports its fields as a plain record (what `describe` knows before the
 * call, what `run` found); the builders here merge them with the fields the runner owns and
 * check the result against the variant's schema, so what the runner publishes is a typed
 * item, or an error naming the tool and the field that does not fit.
 */
import type { TurnItem, TurnItemStatus, TurnItemToolError, TurnItemToolOutcome } from "@turnspec/protocol/types";
import { validate, type TypeMap, type TypeName } from "@turnspec/protocol/validators";
import { LocalError } from "@turnspec/rpc";
import { formatIssue } from "@turnspec/rpc";

/** The item types a tool call can be shown as: every TurnItem variant with a tool_call_id. */
export type ToolItemType = Extract<TurnItem, { tool_call_id?: string }>["type"];

/** The TurnItem variant of one tool item type. */
export type ToolItemOf<T extends ToolItemType> = Extract<TurnItem, { type: T }>;

/** Any tool item. */
export type ToolItem = ToolItemOf<ToolItemType>;

/** The generated type name of each tool item type's variant (checked: each must name the variant of its key). */
const VARIANT = {
  commandExecution: "TurnItemCommandExecution",
  fileChange: "TurnItemFileChange",
  webFetch: "TurnItemWebFetch",
  dynamicToolCall: "TurnItemDynamicToolCall",
  task: "TurnItemTask",
  webSearch: "TurnItemWebSearch",
  download: "TurnItemDownload",
} as const satisfies { [T in ToolItemType]: { [N in TypeName]: TypeMap[N] extends { type: T } ? N : never }[TypeName] };

/** True for an item a tool call is shown as. */
export function isToolItem(item: TurnItem): item is ToolItem {
  return Object.hasOwn(VARIANT, item.type);
}

/** What the runner knows of a call before its tool runs. */
export interface ToolCallOpening {
  readonly id: string;
  readonly round: number;
  readonly toolCallId: string;
  /** The tool's name as the model called it (a dynamic tool call's tool_name). */
  readonly toolName: string;
  /** The call's arguments as an object (kept for the record; a task item has none). */
  readonly args: Record<string, unknown>;
  /** The fields the tool describes before it runs. */
  readonly described: Record<string, unknown>;
}

/** How a tool item ended. */
export interface ToolItemEnd {
  readonly status: Exclude<TurnItemStatus, "in_progress">;
  readonly outcome: TurnItemToolOutcome;
  /** The text the model received (a task's `result`, any other item's `tool_result`). */
  readonly resultText: string;
  readonly error?: TurnItemToolError;
  /** The fields the tool reported when it ran. */
  readonly reported?: Record<string, unknown>;
}

/** The item as it is opened (status in_progress). */
export function openToolItem<T extends ToolItemType>(type: T, call: ToolCallOpening): ToolItemOf<T> {
  return checked(type, {
    type,
    id: call.id,
    status: "in_progress",
    round: call.round,
    tool_call_id: call.toolCallId,
    ...(type === "task" ? {} : { arguments: call.args }),
    ...(type === "dynamicToolCall" ? { tool_name: call.toolName } : {}),
    ...call.described,
  });
}

/** The open item with fields the tool reported while running (item/updated). */
export function updateToolItem(item: ToolItem, fields: Record<string, unknown>): ToolItem {
  return checked(item.type, { ...item, ...fields, type: item.type, id: item.id, status: item.status });
}

/** The item as it ended (item/completed). A task item keeps no outcome: its result is the child's answer. */
export function finishToolItem(item: ToolItem, end: ToolItemEnd): ToolItem {
  const type = item.type;
  return checked(type, {
    ...item,
    ...end.reported,
    type,
    id: item.id,
    status: end.status,
    ...(end.error ? { error: end.error } : {}),
    ...(type === "task" ? { result: end.resultText } : { outcome: end.outcome, tool_result: end.resultText }),
  });
}

/**
 * A tool item built elsewhere (an execution backend's own tool calls) from its fields, as the
 * variant its `type` names; a LocalError names every field that does not fit.
 */
export function toolItemOf(fields: Readonly<Record<string, unknown>> & { readonly type: ToolItemType }): ToolItem {
  return checked(fields.type, fields);
}

/** `fields` as the variant of `type`, or a LocalError naming the item type and every field that does not fit. */
function checked<T extends ToolItemType>(type: T, fields: Readonly<Record<string, unknown>>): ToolItemOf<T> {
  const result = validate(VARIANT[type], fields);
  if (!result.ok) {
    throw new LocalError(
      "invalid_outgoing",
      `the ${type} item of tool call ${String(fields.tool_call_id)} does not fit its schema: ${result.errors.map((i) => formatIssue(i)).join("; ")}`,
      result.errors,
    );
  }
  // The validated value is the variant VARIANT[type] names, whose type is T (checked above).
  return result.value as ToolItemOf<T>;
}
