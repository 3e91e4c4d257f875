/** Answer tokens: bound to (thread, turn, call, index), refused when expired, altered or of another kind. */
import { describe, expect, it } from "vitest";
import { AnswerTokens } from "../../packages/gateway/src/permissions/answer-tokens.js";
import { ResolveTokens } from "../../packages/gateway/src/permissions/tokens.js";

const SECRET = "a-secret-of-enough-bytes";
const binding = { thread_id: "thr_1", turn_id: "trn_1", call_id: "call_1", index: 1 };
const claims = { ...binding, expires_at: "2026-01-01T00:10:00Z" };
const before = new Date("2026-01-01T00:05:00Z");

describe("answer tokens", () => {
  const tokens = new AnswerTokens(SECRET);
  const token = tokens.mint(claims);

  it("verify for exactly the question they were minted for, until they expire", () => {
    expect(tokens.verify(token, binding, before)).toEqual({ ok: true });
    expect(tokens.verify(token, binding, new Date("2026-01-01T00:10:00Z"))).toEqual({ ok: false, reason: "expired" });
  });

  it.each([
    ["another index", { index: 0 }],
    ["another call", { call_id: "call_2" }],
    ["another turn", { turn_id: "trn_2" }],
    ["another thread", { thread_id: "thr_2" }],
  ])("are refused for %s", (_name, change) => {
    expect(tokens.verify(token, { ...binding, ...change }, before)).toEqual({ ok: false, reason: "wrong_question" });
  });

  it("are refused when missing, altered, or signed under another secret", () => {
    expect(tokens.verify(undefined, binding, before)).toEqual({ ok: false, reason: "missing" });
    const [payload, mac] = token.split(".");
    const other = Buffer.from(Buffer.from(payload!, "base64url").toString().replace('"index":1', '"index":0')).toString("base64url");
    expect(tokens.verify(`${other}.${mac}`, { ...binding, index: 0 }, before)).toEqual({ ok: false, reason: "bad_signature" });
    expect(new AnswerTokens("another-secret-of-bytes").verify(token, binding, before)).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("never accept a resolve token under the same secret, nor the other way round", () => {
    const resolve = new ResolveTokens(SECRET);
    const resolveToken = resolve.mint({ request_id: "call_1", turn_id: "trn_1", thread_id: "thr_1", expires_at: claims.expires_at });
    expect(tokens.verify(resolveToken, binding, before)).toEqual({ ok: false, reason: "malformed" });
    expect(resolve.verify(token, { request_id: "call_1", turn_id: "trn_1", thread_id: "thr_1" }, before)).toEqual({
      ok: false,
      reason: "malformed",
    });
  });

  it("are not minted from bad claims", () => {
    expect(() => tokens.mint({ ...claims, call_id: "" })).toThrow(/call_id must be a non-empty string/);
    expect(() => tokens.mint({ ...claims, index: -1 })).toThrow(/index must be a non-negative integer/);
    expect(() => tokens.mint({ ...claims, expires_at: "tomorrow" })).toThrow(/RFC 3339/);
  });
});
