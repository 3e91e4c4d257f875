/**
 * Resolve tokens: accepted only unaltered, for the request, turn and thread they were
 * minted for, under the secret that minted them, and before they expire.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ResolveTokens, type ResolveTokenClaims } from "../../packages/gateway/src/permissions/tokens.js";

const SECRET = "0123456789abcdef0123456789abcdef";
const tokens = new ResolveTokens(SECRET);
const claims: ResolveTokenClaims = { request_id: "perm_1", turn_id: "trn_1", thread_id: "thr_1", expires_at: "2030-01-01T00:10:00.000Z" };
const expected = { request_id: "perm_1", turn_id: "trn_1", thread_id: "thr_1" };
const before = new Date("2030-01-01T00:00:00Z");
const token = tokens.mint(claims);
const [payload, mac] = token.split(".") as [string, string];

/** `text` with the character at `index` replaced by a different base64url character that changes the decoded bytes. */
function flip(text: string, index: number): string {
  const replacement = text[index] === "A" ? "Q" : "A";
  return text.slice(0, index) + replacement + text.slice(index + 1);
}

// The last character of a 32-byte MAC carries 2 used and 4 unused bits: changing only the
// unused ones keeps the decoded bytes, so a lenient decoder would accept this second spelling.
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const respelledMac = mac.slice(0, -1) + ALPHABET[ALPHABET.indexOf(mac.at(-1)!) ^ 1];

const b64 = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");
/** A token as this secret would sign `body`: well signed, but not necessarily a well-formed claim set. */
const signed = (body: string) => `${b64(body)}.${createHmac("sha256", SECRET).update(body).digest("base64url")}`;

describe("ResolveTokens", () => {
  it("mints base64url(claims JSON).base64url(HMAC-SHA256) over the four claims in fixed order", () => {
    const body = JSON.stringify({ request_id: "perm_1", turn_id: "trn_1", thread_id: "thr_1", expires_at: "2030-01-01T00:10:00.000Z" });
    expect(token).toBe(signed(body));
    // Extra fields on the argument are neither carried nor signed.
    expect(tokens.mint({ ...claims, admin: true } as ResolveTokenClaims)).toBe(token);
  });

  it("accepts the token it minted, for the request it was minted for", () => {
    expect(tokens.verify(token, expected, before)).toEqual({ ok: true });
    expect(tokens.verify(token, expected, new Date("2030-01-01T00:09:59.999Z"))).toEqual({ ok: true });
  });

  it("verifies across instances that share the secret (a restarted gateway with a configured secret)", () => {
    expect(new ResolveTokens(Buffer.from(SECRET)).verify(token, expected, before)).toEqual({ ok: true });
  });

  it.each([
    ["undefined", undefined],
    ["an empty string", ""],
  ])("rejects a missing token (%s)", (_name, missing) => {
    expect(tokens.verify(missing, expected, before)).toEqual({ ok: false, reason: "missing" });
  });

  it.each([
    ["no dot", payload + mac],
    ["three parts", `${token}.${mac}`],
    ["an empty payload", `.${mac}`],
    ["an empty signature", `${payload}.`],
    ["characters outside base64url", `${payload}.${mac.slice(0, -2)}+/`],
    ["padding", `${payload}.${mac}=`],
    ["a truncated signature", `${payload}.${mac.slice(0, 20)}`],
    ["a signature too long", `${payload}.${mac}AAAA`],
    ["whitespace", ` ${token}`],
    ["not a token at all", "hello"],
    ["a non-canonical signature encoding", `${payload}.${respelledMac}`],
  ])("rejects a malformed token: %s", (_name, bad) => {
    expect(tokens.verify(bad, expected, before)).toEqual({ ok: false, reason: "malformed" });
  });

  it("has a re-spelled signature that decodes to the same bytes (so the case above tests the encoding check)", () => {
    expect(respelledMac).not.toBe(mac);
    expect(Buffer.from(respelledMac, "base64url")).toEqual(Buffer.from(mac, "base64url"));
  });

  it.each([
    ["an array", "[]"],
    ["a missing claim", JSON.stringify({ request_id: "perm_1", turn_id: "trn_1", thread_id: "thr_1" })],
    ["an extra claim", JSON.stringify({ ...claims, admin: true })],
    ["a claim of the wrong type", JSON.stringify({ ...claims, turn_id: 7 })],
    ["an expiry that is not RFC 3339", JSON.stringify({ ...claims, expires_at: "next week" })],
    ["not JSON", "perm_1|trn_1"],
  ])("rejects a correctly signed body that is not a claim set: %s", (_name, body) => {
    expect(tokens.verify(signed(body), expected, before)).toEqual({ ok: false, reason: "malformed" });
  });

  it("rejects altered claims: one character of the payload changed", () => {
    for (const index of [0, Math.floor(payload.length / 2), payload.length - 2]) {
      expect(tokens.verify(`${flip(payload, index)}.${mac}`, expected, before), `at ${index}`).toEqual({
        ok: false,
        reason: "bad_signature",
      });
    }
  });

  it("rejects claims re-encoded for another request under the old signature", () => {
    const forged = `${b64({ ...claims, request_id: "perm_2" })}.${mac}`;
    expect(tokens.verify(forged, { ...expected, request_id: "perm_2" }, before)).toEqual({ ok: false, reason: "bad_signature" });
    const extended = `${b64({ ...claims, expires_at: "2099-01-01T00:00:00.000Z" })}.${mac}`;
    expect(tokens.verify(extended, expected, new Date("2031-01-01T00:00:00Z"))).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("rejects an altered signature: one character changed", () => {
    for (const index of [0, Math.floor(mac.length / 2)]) {
      expect(tokens.verify(`${payload}.${flip(mac, index)}`, expected, before), `at ${index}`).toEqual({
        ok: false,
        reason: "bad_signature",
      });
    }
  });

  it("rejects a token minted under another secret", () => {
    const other = new ResolveTokens("fedcba9876543210fedcba9876543210").mint(claims);
    expect(tokens.verify(other, expected, before)).toEqual({ ok: false, reason: "bad_signature" });
    expect(ResolveTokens.random().verify(token, expected, before)).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("rejects an expired token, from the expiry instant on", () => {
    expect(tokens.verify(token, expected, new Date("2030-01-01T00:10:00.000Z"))).toEqual({ ok: false, reason: "expired" });
    expect(tokens.verify(token, expected, new Date("2030-06-01T00:00:00Z"))).toEqual({ ok: false, reason: "expired" });
  });

  it("honours an expiry written with an offset", () => {
    const offset = tokens.mint({ ...claims, expires_at: "2030-01-01T01:10:00+01:00" });
    expect(tokens.verify(offset, expected, new Date("2030-01-01T00:09:00Z"))).toEqual({ ok: true });
    expect(tokens.verify(offset, expected, new Date("2030-01-01T00:10:00Z"))).toEqual({ ok: false, reason: "expired" });
  });

  it.each([
    ["another request", { ...expected, request_id: "perm_2" }],
    ["another turn", { ...expected, turn_id: "trn_2" }],
    ["another thread", { ...expected, thread_id: "thr_2" }],
  ])("rejects a token minted for %s", (_name, other) => {
    expect(tokens.verify(token, other, before)).toEqual({ ok: false, reason: "wrong_request" });
  });

  it("says wrong_request rather than expired when both are true", () => {
    expect(tokens.verify(token, { ...expected, request_id: "perm_2" }, new Date("2031-01-01T00:00:00Z"))).toEqual({
      ok: false,
      reason: "wrong_request",
    });
  });

  it("mints a different token for each request, and under each fresh random secret", () => {
    expect(tokens.mint({ ...claims, request_id: "perm_2" })).not.toBe(token);
    expect(ResolveTokens.random().mint(claims)).not.toBe(ResolveTokens.random().mint(claims));
  });

  it("refuses a short secret, and does not see later changes to the one it was given", () => {
    expect(() => new ResolveTokens("short")).toThrow(/at least 16 bytes, got 5/);
    expect(() => new ResolveTokens(new Uint8Array(0))).toThrow(/at least 16 bytes, got 0/);
    const bytes = new Uint8Array(32).fill(7);
    const mine = new ResolveTokens(bytes);
    const minted = mine.mint(claims);
    bytes.fill(8);
    expect(mine.verify(minted, expected, before)).toEqual({ ok: true });
  });

  it.each([
    ["an empty request id", { ...claims, request_id: "" }, /request_id must be a non-empty string/],
    [
      "an expiry that is not a date-time",
      { ...claims, expires_at: "2030-01-01" },
      /expires_at must be an RFC 3339 date-time, got "2030-01-01"/,
    ],
    ["an impossible date", { ...claims, expires_at: "2030-13-01T00:00:00Z" }, /RFC 3339/],
  ])("refuses to mint with %s", (_name, bad, message) => {
    expect(() => tokens.mint(bad)).toThrow(message);
  });
});
