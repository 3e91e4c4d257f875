/**
 * Resolve tokens: the short-lived capability a client echoes back when it answers an
 * approval request. The gateway signs the request id, turn id, thread id and expiry with
 * a secret only it holds, so an answer is accepted only for the request, turn and thread
 * the token was minted for, and only until it expires. A request id alone is guessable
 * and replayable across turns; the token is neither.
 *
 * Format: base64url(claims JSON) "." base64url(HMAC-SHA256(secret, claims JSON)), with the
 * claims serialized in one fixed key order, so the bytes signed are the bytes carried.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export interface ResolveTokenClaims {
  readonly request_id: string;
  readonly turn_id: string;
  readonly thread_id: string;
  /** RFC 3339 date-time; the token is refused from this instant on. */
  readonly expires_at: string;
}

export type ResolveTokenBinding = Pick<ResolveTokenClaims, "request_id" | "turn_id" | "thread_id">;

export type TokenRejection = "missing" | "malformed" | "bad_signature" | "expired" | "wrong_request";

export type TokenCheck = { readonly ok: true } | { readonly ok: false; readonly reason: TokenRejection };

/** What is wrong with a refused resolve or answer token, in words that follow "the token is". */
export const TOKEN_REJECTION_WORDS: Readonly<Record<TokenRejection | "wrong_question", string>> = {
  missing: "missing",
  malformed: "malformed",
  bad_signature: "not signed by this gateway (another gateway's, or altered)",
  expired: "expired",
  wrong_request: "another request's",
  wrong_question: "another question's",
};

/** A shorter secret can be brute-forced offline from a single token. */
const MIN_SECRET_BYTES = 16;
const MAC_BYTES = 32;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
// RFC 3339 date-time (Date.parse also accepts forms that are not, such as "2026-01-01").
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const CLAIM_KEYS = ["request_id", "turn_id", "thread_id", "expires_at"] as const;

/** Why a token's envelope was refused before any claim in it was read. */
export type EnvelopeRejection = "missing" | "malformed" | "bad_signature";

/**
 * The envelope every kind of token here shares: base64url(claims JSON) "." base64url(MAC).
 * `seal` signs the exact bytes it carries; `open` checks the signature, in constant time,
 * before it parses anything, so unauthenticated content is never interpreted.
 */
export class TokenSigner {
  readonly #secret: Buffer;

  /** `secret`: at least 16 bytes; a string is taken as UTF-8. Copied, so later changes to it do not matter. */
  constructor(secret: Uint8Array | string, what: string) {
    const bytes = typeof secret === "string" ? Buffer.from(secret, "utf8") : Buffer.from(secret);
    if (bytes.length < MIN_SECRET_BYTES) {
      throw new Error(
        `a ${what} secret needs at least ${MIN_SECRET_BYTES} bytes, got ${bytes.length}; ResolveTokens.random() makes a suitable one`,
      );
    }
    this.#secret = bytes;
  }

  /** The token carrying `claims`, serialized in the key order given. */
  seal(claims: object): string {
    const payload = Buffer.from(JSON.stringify(claims), "utf8");
    return `${payload.toString("base64url")}.${this.#mac(payload).toString("base64url")}`;
  }

  /** The signed claims of `token`, parsed, or why the envelope was refused. */
  open(
    token: string | undefined,
  ): { readonly ok: true; readonly claims: unknown } | { readonly ok: false; readonly reason: EnvelopeRejection } {
    if (token === undefined || token === "") return { ok: false, reason: "missing" };
    if (typeof token !== "string") return { ok: false, reason: "malformed" };
    const parts = token.split(".");
    if (parts.length !== 2) return { ok: false, reason: "malformed" };
    const payload = strictBase64url(parts[0]!);
    const mac = strictBase64url(parts[1]!);
    if (!payload || !mac || mac.length !== MAC_BYTES) return { ok: false, reason: "malformed" };
    // Constant-time, so the time taken does not tell how much of a forged MAC was right.
    if (!timingSafeEqual(mac, this.#mac(payload))) return { ok: false, reason: "bad_signature" };
    try {
      return { ok: true, claims: JSON.parse(payload.toString("utf8")) };
    } catch {
      // Signed by this secret yet not JSON: the secret is shared with something else.
      return { ok: false, reason: "malformed" };
    }
  }

  #mac(payload: Buffer): Buffer {
    return createHmac("sha256", this.#secret).update(payload).digest();
  }
}

export class ResolveTokens {
  readonly #signer: TokenSigner;

  /** `secret`: at least 16 bytes; a string is taken as UTF-8. Copied, so later changes to it do not matter. */
  constructor(secret: Uint8Array | string) {
    this.#signer = new TokenSigner(secret, "resolve-token");
  }

  /** Tokens under a fresh 32-byte secret: they stop verifying when this gateway process ends. */
  static random(): ResolveTokens {
    return new ResolveTokens(randomBytes(32));
  }

  /** A token binding these claims. Throws when an id is empty or expires_at is not an RFC 3339 date-time. */
  mint(claims: ResolveTokenClaims): string {
    for (const key of ["request_id", "turn_id", "thread_id"] as const) {
      if (typeof claims[key] !== "string" || claims[key] === "")
        throw new Error(`cannot mint a resolve token: ${key} must be a non-empty string, got ${JSON.stringify(claims[key])}`);
    }
    if (!isRfc3339(claims.expires_at))
      throw new Error(`cannot mint a resolve token: expires_at must be an RFC 3339 date-time, got ${JSON.stringify(claims.expires_at)}`);
    // Only the four claims, in fixed order: extra fields on the argument are not signed.
    return this.#signer.seal(Object.fromEntries(CLAIM_KEYS.map((key) => [key, claims[key]])));
  }

  /**
   * Whether `token` is one this instance minted, for exactly `expected`'s request, turn
   * and thread, and not expired at `now`. The signature is checked before anything in the
   * token is read, so unauthenticated content is never interpreted.
   */
  verify(token: string | undefined, expected: ResolveTokenBinding, now: Date): TokenCheck {
    const opened = this.#signer.open(token);
    if (!opened.ok) return opened;
    const claims = parseClaims(opened.claims);
    // Signed by this secret yet not our shape: the secret is shared with something else.
    if (!claims) return { ok: false, reason: "malformed" };
    // Checked before expiry: a token for another request is the graver mismatch, and says so even when also stale.
    if (claims.request_id !== expected.request_id || claims.turn_id !== expected.turn_id || claims.thread_id !== expected.thread_id) {
      return { ok: false, reason: "wrong_request" };
    }
    if (now.getTime() >= Date.parse(claims.expires_at)) return { ok: false, reason: "expired" };
    return { ok: true };
  }
}

/**
 * The bytes of `text` if it is canonical unpadded base64url, else undefined. Node's
 * decoder skips characters it does not know and ignores the unused low bits of the last
 * character, so without the round trip two different strings would carry one MAC.
 */
export function strictBase64url(text: string): Buffer | undefined {
  if (!BASE64URL.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? bytes : undefined;
}

function parseClaims(value: unknown): ResolveTokenClaims | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (Object.keys(record).length !== CLAIM_KEYS.length) return undefined;
  if (!CLAIM_KEYS.every((key) => typeof record[key] === "string")) return undefined;
  if (!isRfc3339(record.expires_at as string)) return undefined;
  return record as unknown as ResolveTokenClaims;
}

export function isRfc3339(text: unknown): text is string {
  return typeof text === "string" && RFC3339.test(text) && !Number.isNaN(Date.parse(text));
}
