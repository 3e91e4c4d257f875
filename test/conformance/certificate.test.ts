/**
 * Certificates anyone can check: signed with an Ed25519 key the vendor or a certifying
 * party holds, verified offline with the public key. A certificate verifies; any one byte
 * changed in it, or another key, fails verification; the report digest it names is the
 * report's. Through the command line too: `turnspec certify --sign-key` and
 * `turnspec certificate verify`.
 */
import { spawnSync } from "node:child_process";
import { createHash, generateKeyPairSync } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  buildCertificate,
  keyId,
  renderCertificate,
  verifyCertificate,
  verifyingKey,
} from "../../packages/conformance/src/report/certificate.js";
import { renderJsonReport } from "../../packages/conformance/src/report/json.js";
import { certifiedReport } from "./report/fixtures.js";
import { REFERENCE } from "./reference.js";

const vendor = generateKeyPairSync("ed25519");
const other = generateKeyPairSync("ed25519");
const report = { ...certifiedReport(), subject: "Example Gateway 2.3.1" };

describe("a signed certificate", () => {
  const text = renderCertificate(report, vendor.privateKey);

  it("names the suite version, what was certified, every requirement's outcome and the report's digest, and verifies with the signer's public key", () => {
    const file = JSON.parse(text) as { certificate: ReturnType<typeof buildCertificate>; signature: { algorithm: string; keyId: string } };
    expect(file.certificate).toMatchObject({
      suite: { name: "turnspec", version: "7.0" },
      subject: { kind: "gateway", name: "Example Gateway 2.3.1", command: "node gateway.js --stdio" },
      certified: true,
      report: { sha256: createHash("sha256").update(renderJsonReport(report)).digest("hex") },
    });
    expect(file.certificate.results.map((r) => `${r.id} ${r.outcome}`)).toEqual(report.results.map((r) => `${r.id} ${r.outcome}`));
    expect(file.signature).toMatchObject({ algorithm: "Ed25519", keyId: keyId(vendor.publicKey) });
    expect(verifyCertificate(text, vendor.publicKey)).toMatchObject({ valid: true });
    expect(verifyCertificate(text, vendor.publicKey, renderJsonReport(report))).toMatchObject({ valid: true });
  });

  it("fails verification when any one byte of it is changed", () => {
    const bytes = Buffer.from(text);
    const passed: number[] = [];
    for (let i = 0; i < bytes.length; i++) {
      const changed = Buffer.from(bytes);
      // Another printable character in its place (a space for a letter, a letter for anything else).
      changed[i] = bytes[i] === 0x61 ? 0x62 : 0x61;
      if (verifyCertificate(changed.toString("utf8"), vendor.publicKey).valid) passed.push(i);
    }
    expect(passed).toEqual([]);
    // The reasons say what is wrong: a value changed breaks the signature, a layout changed the written form.
    const value = text.replace('"certified": true', '"certified": fals');
    expect(verifyCertificate(value, vendor.publicKey)).toMatchObject({ valid: false, reason: expect.stringContaining("it is not JSON") });
    const result = text.replace(/"outcome": "fail"/, '"outcome": "pass"');
    expect(result).not.toBe(text);
    expect(verifyCertificate(result, vendor.publicKey)).toMatchObject({
      valid: false,
      reason: "its signature does not match its contents: the certificate was changed after it was signed",
    });
    expect(verifyCertificate(text.replace('\n  "signature"', '\n   "signature"'), vendor.publicKey)).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/^it is not as it was written: it differs from its own JSON at character \d+$/),
    });
  });

  it("fails verification with another key, with an unsigned certificate, and with another report", () => {
    expect(verifyCertificate(text, other.publicKey)).toEqual({
      valid: false,
      reason: `it was signed by the key ${keyId(vendor.publicKey)}, not by the given key ${keyId(other.publicKey)}`,
      file: JSON.parse(text),
    });
    // A signature made over the same certificate by another key does not hold under the vendor's key id either.
    const forged = JSON.parse(renderCertificate(report, other.privateKey)) as { signature: { keyId: string } };
    forged.signature.keyId = keyId(vendor.publicKey);
    expect(verifyCertificate(`${JSON.stringify(forged, null, 2)}\n`, vendor.publicKey)).toMatchObject({
      valid: false,
      reason: expect.stringContaining("its signature does not match"),
    });
    expect(verifyCertificate(renderCertificate(report), vendor.publicKey)).toMatchObject({
      valid: false,
      reason: "it is not signed (certify writes a signature with --sign-key)",
    });
    expect(
      verifyCertificate(text, vendor.publicKey, renderJsonReport({ ...report, finishedAt: "2026-12-01T00:00:00.000Z" })),
    ).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/^the report's sha256 is [0-9a-f]{64}, the certificate names [0-9a-f]{64}$/),
    });
  });

  it("takes only Ed25519 keys", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 });
    expect(() => verifyingKey(rsa.publicKey.export({ type: "spki", format: "pem" }) as string, "pub.pem")).toThrow(
      "pub.pem is a rsa key; certificates are signed with Ed25519",
    );
    expect(() => verifyingKey("not a key", "pub.pem")).toThrow("pub.pem is not a PEM public key");
  });
});

describe("turnspec certify --sign-key and turnspec certificate verify", () => {
  it("signs the certificate of a run, and the command line verifies it; a changed byte or another key exits 1, an unreadable key 2", () => {
    const dir = mkdtempSync(join(tmpdir(), "turnspec-certificate-"));
    const key = join(dir, "vendor.pem");
    const pub = join(dir, "vendor.pub.pem");
    const otherPub = join(dir, "other.pub.pem");
    writeFileSync(key, vendor.privateKey.export({ type: "pkcs8", format: "pem" }));
    writeFileSync(pub, vendor.publicKey.export({ type: "spki", format: "pem" }));
    writeFileSync(otherPub, other.publicKey.export({ type: "spki", format: "pem" }));
    const certificate = join(dir, "certificate.json");
    const json = join(dir, "report.json");
    const run = spawnSync(
      "node",
      [
        "bin/turnspec.js",
        "certify",
        "--gateway-cmd",
        REFERENCE,
        "--only",
        "RPC-*",
        "--subject",
        "turnspec reference gateway",
        "--json",
        json,
        "--certificate",
        certificate,
        "--sign-key",
        key,
      ],
      { encoding: "utf8", timeout: 120_000 },
    );
    expect(run.stdout).toContain("turnspec suite 8.0 certifying turnspec reference gateway: ");
    expect(run.status).toBe(0);

    const verify = (file: string, publicKey: string, ...more: string[]) =>
      spawnSync("node", ["bin/turnspec.js", "certificate", "verify", file, "--key", publicKey, ...more], { encoding: "utf8" });
    const ok = verify(certificate, pub, "--report", json);
    expect(ok.stdout).toContain(`${certificate}: valid, signed by key ${keyId(vendor.publicKey)}`);
    expect(ok.stdout).toContain("gateway turnspec reference gateway, node bin/turnspec.js serve --stdio");
    expect(ok.stdout).toContain("turnspec suite 8.0");
    expect(ok.stdout).toContain("a partial run (certifies nothing)");
    expect(ok.status).toBe(0);

    const text = readFileSync(certificate, "utf8");
    const tampered = join(dir, "tampered.json");
    writeFileSync(tampered, text.replace('"outcome": "pass"', '"outcome": "fail"'));
    const changed = verify(tampered, pub);
    expect([changed.status, changed.stderr]).toEqual([
      1,
      `turnspec certificate verify: ${tampered} does not verify: its signature does not match its contents: the certificate was changed after it was signed\n`,
    ]);
    const wrongKey = verify(certificate, otherPub);
    expect(wrongKey.status).toBe(1);
    expect(wrongKey.stderr).toContain("does not verify: it was signed by the key");
    const noKey = verify(certificate, join(dir, "missing.pem"));
    expect([noKey.status, noKey.stderr]).toEqual([
      2,
      `turnspec certificate verify: cannot read the key ${join(dir, "missing.pem")}: no such file\n`,
    ]);
    const unsignedRun = spawnSync(
      "node",
      ["bin/turnspec.js", "certify", "--gateway-cmd", REFERENCE, "--only", "RPC-*", "--sign-key", key],
      { encoding: "utf8" },
    );
    expect([unsignedRun.status, unsignedRun.stderr]).toEqual([
      2,
      "turnspec certify: --sign-key signs the certificate: give --certificate FILE too\n",
    ]);
  });
});
