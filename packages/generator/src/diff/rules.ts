/**
 * The rules `turnspec diff` judges changes by, each with a stable id (as `buf breaking`
 * names its rules): a report's change carries the id of its rule, and a team accepts a
 * change for one release by that id (turnspec.config.json's diff.accept). docs/diff.md
 * lists them; test/diff/rules.test.ts keeps that list and this one the same.
 */

export interface Rule {
  /** wire (deployed peers), code (code compiled against the generated output), or both for the informational ones. */
  readonly category: "wire" | "code";
  /** What the rule is about, in a sentence. */
  readonly about: string;
}

export const RULES = {
  // Message schemas (wire)
  FIELD_ADDED: {
    category: "wire",
    about:
      "A field only one version declares reaches a receiver whose object is closed (strict mode): added, it breaks old receivers; removed, new ones.",
  },
  FIELD_REMOVED: { category: "wire", about: "A field the old version declares, sent to a new receiver whose object is closed." },
  FIELD_REQUIRED_ADDED: { category: "wire", about: "A required field added: old senders leave it out." },
  FIELD_REQUIRED_REMOVED: { category: "wire", about: "A required field removed: new senders leave it out, old receivers require it." },
  FIELD_MADE_REQUIRED: { category: "wire", about: "An optional field made required: old senders may leave it out." },
  FIELD_MADE_OPTIONAL: {
    category: "wire",
    about: "A required field made optional: new senders may leave it out, old receivers require it.",
  },
  FIELD_CONSTRAINED: {
    category: "wire",
    about: "A field the sender's explicitly open object may fill with anything, constrained by the receiver.",
  },
  OBJECT_CLOSED: {
    category: "wire",
    about: "An object whose sender may send other fields (additionalProperties true or a schema) is closed by the receiver.",
  },
  ADDITIONAL_PROPERTIES_CONSTRAINED: {
    category: "wire",
    about: "The other fields of an object, free in the sender's schema, constrained by the receiver's.",
  },
  PROPERTY_NAMES_CHANGED: { category: "wire", about: "The keys an object (a map) may have, narrowed by propertyNames." },
  TYPE_CHANGED: { category: "wire", about: "A JSON type the sender may send that the receiver does not accept." },
  ENUM_VALUE_ADDED: {
    category: "wire",
    about: "An enum value added: new senders may send it to old receivers (not when the enum is x-open).",
  },
  ENUM_VALUE_REMOVED: {
    category: "wire",
    about: "An enum value removed: old senders may send it to new receivers (not when the enum is x-open).",
  },
  ENUM_VALUE_REJECTED: { category: "wire", about: "A value both enums list that another keyword of the receiver rejects." },
  CONST_CHANGED: { category: "wire", about: "A const changed." },
  VALUES_RESTRICTED: { category: "wire", about: "Any value narrowed to a list of values (an enum or const)." },
  NULL_ADDED: { category: "wire", about: "null allowed where it was not: new senders may send it to old receivers." },
  NULL_REMOVED: { category: "wire", about: "null no longer allowed: old senders may send it to new receivers." },
  VARIANT_ADDED: {
    category: "wire",
    about: "A union variant added (by its tag): new senders may send it to old receivers (not when the union is x-open).",
  },
  VARIANT_REMOVED: { category: "wire", about: "A union variant removed: old senders may send it to new receivers." },
  UNION_INTRODUCED: { category: "wire", about: "A single type replaced by a union whose tag the sender's values do not carry." },
  ITEMS_CONSTRAINED: { category: "wire", about: "Array items that could be anything, constrained." },
  MIN_ITEMS_CHANGED: { category: "wire", about: "More items (or tuple positions) required than the sender always sends." },
  MAX_ITEMS_CHANGED: { category: "wire", about: "Fewer items allowed than the sender may send." },
  POSITION_ADDED: {
    category: "wire",
    about: "A tuple longer than the other version takes: new senders may send more positions than old receivers accept.",
  },
  POSITION_REMOVED: {
    category: "wire",
    about: "A tuple shorter than the other version sends: old senders may send positions new receivers refuse.",
  },
  MIN_LENGTH_CHANGED: { category: "wire", about: "A string's minLength above what the sender may send." },
  MAX_LENGTH_CHANGED: { category: "wire", about: "A string's maxLength below what the sender may send." },
  PATTERN_CHANGED: {
    category: "wire",
    about: "A string's pattern changed: breaking when a generated string shows it, undetermined otherwise.",
  },
  MINIMUM_CHANGED: { category: "wire", about: "A lower bound (minimum or exclusiveMinimum) above what the sender may send." },
  MAXIMUM_CHANGED: { category: "wire", about: "An upper bound (maximum or exclusiveMaximum) below what the sender may send." },
  MULTIPLE_OF_CHANGED: { category: "wire", about: "multipleOf changed (undetermined unless a generated value shows it)." },
  SCHEMA_FALSE: { category: "wire", about: "A schema that accepts nothing." },
  SCHEMA_UNRESOLVED: { category: "wire", about: "A reference that could not be followed (undetermined)." },
  KEYWORD_NOT_COMPARED: { category: "wire", about: "A keyword the comparison does not judge changed (undetermined)." },
  SCHEMA_CHANGED: {
    category: "wire",
    about: "A message's schema changed and both deployments accept what the other sends (compatible, listed for review).",
  },
  // The protocol table, the error registry, the protocol-level settings (wire)
  METHOD_ADDED: { category: "wire", about: "A method added (compatible: an old receiver answers -32601)." },
  METHOD_REMOVED: { category: "wire", about: "A method removed: old callers get -32601." },
  METHOD_RENAMED: { category: "wire", about: "A method removed and one with the same params and direction added." },
  NOTIFICATION_ADDED: { category: "wire", about: "A notification added (compatible)." },
  NOTIFICATION_REMOVED: { category: "wire", about: "A notification removed: old receivers wait for it." },
  NOTIFICATION_RENAMED: { category: "wire", about: "A notification removed and one with the same params and direction added." },
  DIRECTION_CHANGED: {
    category: "wire",
    about:
      "Who sends a message changed (client_to_server, server_to_client, both): a side that may send it now, or may no longer, breaks the other side's deployed peers.",
  },
  PARAM_STRUCTURE_CHANGED: { category: "wire", about: "How params are sent changed (by-name, by-position, either)." },
  PARAMS_MADE_REQUIRED: {
    category: "wire",
    about: "Params that could be left out are now required: old senders that leave them out are refused.",
  },
  PARAMS_MADE_OPTIONAL: {
    category: "wire",
    about: "Params that were required may now be left out: new senders that leave them out are refused by old receivers.",
  },
  PARAMS_ADDED: { category: "wire", about: "A message that took no params now takes them." },
  PARAMS_REMOVED: { category: "wire", about: "A message that took params now takes none." },
  ERROR_CODE_CHANGED: { category: "wire", about: "An error's code changed (same reason)." },
  ERROR_REASON_CHANGED: { category: "wire", about: "An error's reason changed (same code)." },
  ERROR_REMOVED: { category: "wire", about: "An error removed from the registry." },
  ERROR_ADDED_TO_METHOD: { category: "wire", about: "An error added to a method's errors: old callers do not expect it." },
  ERROR_REMOVED_FROM_METHOD: { category: "wire", about: "An error removed from a method's errors." },
  ERROR_DATA_ADDED: { category: "wire", about: "An error's data given a type: old servers may send data that does not fit it." },
  ERROR_DATA_REMOVED: { category: "wire", about: "An error's data no longer typed (compatible for receivers, listed for review)." },
  BATCHES_ADDED: {
    category: "wire",
    about: "The protocol takes batches now: new senders may send them to old receivers, which refuse them.",
  },
  BATCHES_REMOVED: {
    category: "wire",
    about: "The protocol no longer takes batches: old senders may send them to new receivers, which refuse them.",
  },
  OBJECTS_OPENED: {
    category: "wire",
    about: "Objects that do not state additionalProperties now keep other fields (compatible for receivers, listed for review).",
  },
  OBJECTS_CLOSED: { category: "wire", about: "Objects that do not state additionalProperties now refuse other fields in strict mode." },
  ORDERING_RULE_ADDED: { category: "wire", about: "An ordering rule added: implementations certified against the old rules may fail it." },
  ORDERING_RULE_TIGHTENED: { category: "wire", about: "An ordering rule's lists changed so that more is refused." },
  ORDERING_RULE_CHANGED: { category: "wire", about: "An ordering rule changed otherwise (undetermined)." },
  ORDERING_RULE_LOOSENED: { category: "wire", about: "An ordering rule's lists changed so that less is refused (compatible)." },
  ORDERING_RULE_REMOVED: { category: "wire", about: "An ordering rule removed (compatible)." },
  // Generated code (code)
  CODE_TYPE_REMOVED: { category: "code", about: "An exported type removed." },
  CODE_TYPE_RENAMED: { category: "code", about: "An exported type renamed." },
  CODE_TYPE_CHANGED: { category: "code", about: "A type without fields whose TypeScript type changed." },
  CODE_FIELD_REMOVED: { category: "code", about: "A field removed from an exported type." },
  CODE_FIELD_TYPE_CHANGED: { category: "code", about: "A field's TypeScript type changed." },
  CODE_FIELD_MADE_OPTIONAL: { category: "code", about: "A required field made optional." },
  CODE_FIELD_MADE_REQUIRED: { category: "code", about: "An optional field made required." },
  CODE_FIELD_REQUIRED_ADDED: { category: "code", about: "A required field added." },
  CODE_NAME_REMOVED: { category: "code", about: "A name of MethodName, NotificationName or ErrorReason removed." },
  CODE_HANDLER_ADDED: { category: "code", about: "A method servers serve added: a Handlers map written against the old output lacks it." },
} as const satisfies Record<string, Rule>;

export type RuleId = keyof typeof RULES;
