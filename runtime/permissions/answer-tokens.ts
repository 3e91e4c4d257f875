/**
 * Answer tokens: the short-lived capability a client echoes back when it answers a
 * question the model asked (turn/question/respond). Like a resolve token (tokens.ts), it is
 * the claims signed with HMAC-SHA256 under a secret only the gateway holds, here bound to
 * the question's identity (turn, call id, index) and its thread, so an answer is accepted
 * only for the question it was minted for, and only until it expires.
 *
 * The claims start with `"kind":"question_answer"` and have another key set than a resolve
 * token's, so one kind of token never verifies as the other even under a shared secret.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { isRfc3339, strictBase64url } from "./tokens.js";

export interface AnswerTokenClaims {
  readonly thread_id: string;
  readonly turn_id: string;
  readonly call_id: string;
  readonly index: number;
  /** RFC 3339 date-time; the token is refused from this instant on. */
  readonly expires_at: string;
}

export type AnswerTokenBinding = Omit<AnswerTokenClaims, "expires_at">;

export type AnswerTokenRejection = "missing" | "malformed" | "bad_signature" | "expired" | "wrong_question";

export type AnswerTokenCheck = { readonly ok: true } | { readonly ok: false; readonly reason: AnswerTokenRejection };

const KIND = "question_answer";
const MAC_BYTES = 32;
const MIN_SECRET_BYTES = 16;

export class AnswerTokens {
  readonly #secret: Buffer;

  /** `secret`: at least 16 bytes; a string is taken as UTF-8. */
  constructor(secret: Uint8Array | string) {
    const bytes = typeof secret === "string" ? Buffer.from(secret, "utf8") : Buffer.from(secret);
    if (bytes.length < MIN_SECRET_BYTES) throw new Error(`an answer-token secret needs at least ${MIN_SECRET_BYTES} bytes, got ${bytes.length}`);
    this.#secret = bytes;
  }

  /** A token binding these claims. Throws when an id is empty, the index is not a non-negative integer or expires_at is not RFC 3339. */
  mint(claims: AnswerTokenClaims): string {
    for (const key of ["thread_id", "turn_id", "call_id"] as const) {
      if (typeof claims[key] !== "string" || claims[key] === "") throw new Error(`cannot mint an answer token: ${key} must be a non-empty string, got ${JSON.stringify(claims[key])}`);
    }
    if (!Number.isInteger(claims.index) || claims.index < 0) throw new Error(`cannot mint an answer token: index must be a non-negative integer, got ${JSON.stringify(claims.index)}`);
    if (!isRfc3339(claims.expires_at)) throw new Error(`cannot mint an answer token: expires_at must be an RFC 3339 date-time, got ${JSON.stringify(claims.expires_at)}`);
    // Fixed key order: the bytes signed are the bytes carried.
    const payload = Buffer.from(
      JSON.stringify({ kind: KIND, thread_id: claims.thread_id, turn_id: claims.turn_id, call_id: claims.call_id, index: claims.index, expires_at: claims.expires_at }),
      "utf8",
    );
    return `${payload.toString("base64url")}.${this.#mac(payload).toString("base64url")}`;
  }

  /** Whether `token` was minted here for exactly `expected`'s question and thread, and has not expired at `now`. The signature is checked before anything in it is read. */
  verify(token: string | undefined, expected: AnswerTokenBinding, now: Date): AnswerTokenCheck {
    if (token === undefined || token === "") return { ok: false, reason: "missing" };
    if (typeof token !== "string") return { ok: false, reason: "malformed" };
    const parts = token.split(".");
    if (parts.length !== 2) return { ok: false, reason: "malformed" };
    const payload = strictBase64url(parts[0]!);
    const mac = strictBase64url(parts[1]!);
    if (!payload || !mac || mac.length !== MAC_BYTES) return { ok: false, reason: "malformed" };
    if (!timingSafeEqual(mac, this.#mac(payload))) return { ok: false, reason: "bad_signature" };
    const claims = parseClaims(payload);
    if (!claims) return { ok: false, reason: "malformed" };
    if (claims.thread_id !== expected.thread_id || claims.turn_id !== expected.turn_id || claims.call_id !== expected.call_id || claims.index !== expected.index) {
      return { ok: false, reason: "wrong_question" };
    }
    if (now.getTime() >= Date.parse(claims.expires_at)) return { ok: false, reason: "expired" };
    return { ok: true };
  }

  #mac(payload: Buffer): Buffer {
    return createHmac("sha256", this.#secret).update(payload).digest();
  }
}

function parseClaims(payload: Buffer): AnswerTokenClaims | undefined {
  let value: unknown;
  try {
    value = JSON.parse(payload.toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const r = value as Record<string, unknown>;
  if (Object.keys(r).length !== 6 || r.kind !== KIND) return undefined;
  if (typeof r.thread_id !== "string" || typeof r.turn_id !== "string" || typeof r.call_id !== "string") return undefined;
  if (!Number.isInteger(r.index) || !isRfc3339(r.expires_at)) return undefined;
  return r as unknown as AnswerTokenClaims;
}
