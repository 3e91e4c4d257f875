// Check values against the generated validators: strict for what you send, tolerant for what you receive.
import { isTurnStartParams, validate, validateParams } from "@turnspec/protocol";

const params = {
  thread_id: "thr_1",
  turn_id: "trn_1",
  input: [{ type: "text", text: "Hello", textElements: [] }],
  permission_profile: { mode: "admin" },
  priority: "high",
};

// Strict: unknown fields and unknown enum values are errors. Every issue names its JSON pointer.
const strict = validate("TurnStartParams", params);
if (!strict.ok) for (const e of strict.errors) console.log(`strict ${e.pointer}: ${e.message}; got ${JSON.stringify(e.received)}`);

// Tolerant: unknown fields pass (a newer gateway may send more), enums stay exact.
const tolerant = validate("TurnStartParams", params, "tolerant");
if (!tolerant.ok) for (const e of tolerant.errors) console.log(`tolerant ${e.pointer}: ${e.message}`);

// By method name, and as a type guard.
const { priority: _unknown, ...known } = params;
const fixed = { ...known, permission_profile: { mode: "supervised" } };
console.log(`turn/start params valid: ${validateParams("turn/start", fixed).ok}`);
if (isTurnStartParams(fixed)) console.log(`a TurnStartParams for thread ${fixed.thread_id}`);
