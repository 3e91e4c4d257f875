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
import { isRfc3339, TokenSigner } from "./tokens.js";

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

export class AnswerTokens {
  readonly #signer: TokenSigner;

  /** `secret`: at least 16 bytes; a string is taken as UTF-8. */
  constructor(secret: Uint8Array | string) {
    this.#signer = new TokenSigner(secret, "answer-token");
  }

  /** A token binding these claims. Throws when an id is empty, the index is not a non-negative integer or expires_at is not RFC 3339. */
  mint(claims: AnswerTokenClaims): string {
    for (const key of ["thread_id", "turn_id", "call_id"] as const) {
      if (typeof claims[key] !== "string" || claims[key] === "")
        throw new Error(`cannot mint an answer token: ${key} must be a non-empty string, got ${JSON.stringify(claims[key])}`);
    }
    if (!Number.isInteger(claims.index) || claims.index < 0)
      throw new Error(`cannot mint an answer token: index must be a non-negative integer, got ${JSON.stringify(claims.index)}`);
    if (!isRfc3339(claims.expires_at))
      throw new Error(`cannot mint an answer token: expires_at must be an RFC 3339 date-time, got ${JSON.stringify(claims.expires_at)}`);
    // Fixed key order: the bytes signed are the bytes carried.
    return this.#signer.seal({
      kind: KIND,
      thread_id: claims.thread_id,
      turn_id: claims.turn_id,
      call_id: claims.call_id,
      index: claims.index,
      expires_at: claims.expires_at,
    });
  }

  /** Whether `token` was minted here for exactly `expected`'s question and thread, and has not expired at `now`. The signature is checked before anything in it is read. */
  verify(token: string | undefined, expected: AnswerTokenBinding, now: Date): AnswerTokenCheck {
    const opened = this.#signer.open(token);
    if (!opened.ok) return opened;
    const claims = parseClaims(opened.claims);
    if (!claims) return { ok: false, reason: "malformed" };
    if (
      claims.thread_id !== expected.thread_id ||
      claims.turn_id !== expected.turn_id ||
      claims.call_id !== expected.call_id ||
      claims.index !== expected.index
    ) {
      return { ok: false, reason: "wrong_question" };
    }
    if (now.getTime() >= Date.parse(claims.expires_at)) return { ok: false, reason: "expired" };
    return { ok: true };
  }
}

function parseClaims(value: unknown): AnswerTokenClaims | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const r = value as Record<string, unknown>;
  if (Object.keys(r).length !== 6 || r.kind !== KIND) return undefined;
  if (typeof r.thread_id !== "string" || typeof r.turn_id !== "string" || typeof r.call_id !== "string") return undefined;
  if (!Number.isInteger(r.index) || !isRfc3339(r.expires_at)) return undefined;
  return r as unknown as AnswerTokenClaims;
}
