/**
 * The certificate of a run (`conformance/schemas/certificate.schema.json`): the suite version
 * and schemas the gateway or client was judged by, what it is (the vendor's own name for it,
 * and how the suite reached it), when, the level it achieved, the outcome of every
 * requirement and the sha256 of the whole JSON report, without the transcripts.
 *
 * Signed with an Ed25519 key the vendor or a certifying party holds (`--sign-key FILE`, a
 * PEM private key), anyone holding the public key checks it offline with
 * `turnspec certificate verify FILE --key PUB`. The signature covers the certificate's text
 * exactly as written, and the file must be exactly as `turnspec certify` wrote it: one
 * byte changed anywhere, or another key, fails verification.
 */
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from "node:crypto";
import { verdictOf } from "../verdict.js";
import type { Capability, Level, Outcome, RunReport } from "../results.js";
import { targetOf } from "./format.js";
import { jsonText, renderJsonReport } from "./json.js";

export interface Certificate {
  suite: RunReport["suite"];
  schemaHash: string;
  /** What was certified: a gateway or a client, the vendor's name for it, and how the suite reached it. */
  subject: { kind: "gateway" | "client"; name?: string; command?: string; url?: string };
  /** When the run finished (RFC 3339). */
  date: string;
  capabilities: Capability[];
  requestedLevel: RunReport["requestedLevel"];
  level: RunReport["achievedLevel"];
  /** The claimed capabilities every MUST of which passed (core first). */
  certifiedCapabilities: Capability[];
  /** --only/--skip left requirements out: the run certifies nothing. */
  partial: boolean;
  certified: boolean;
  results: { id: string; level: Level; capability: Capability; outcome: Outcome; expectedFailure?: boolean }[];
  /** The JSON report of the same run (`--json`), by the sha256 of its text as written. */
  report: { sha256: string };
}

/** The Ed25519 signature of a certificate, by the key whose fingerprint it names. */
export interface CertificateSignature {
  algorithm: "Ed25519";
  /** sha256 (hex) of the signing key's public key in DER (SubjectPublicKeyInfo). */
  keyId: string;
  /** The signature over the certificate's text as written (see certificateText), base64. */
  value: string;
}

/** The certificate file: the certificate, and its signature when the run was given a key. */
export interface CertificateFile {
  certificate: Certificate;
  signature?: CertificateSignature;
}

export function buildCertificate(report: RunReport): Certificate {
  const verdict = verdictOf(report);
  const target = targetOf(report);
  return {
    suite: report.suite,
    schemaHash: report.schemaHash,
    subject: {
      kind: target.kind,
      ...(report.subject === undefined ? {} : { name: report.subject }),
      ...(target.text === "" ? {} : target.how === "URL" ? { url: target.text } : { command: target.text }),
    },
    date: report.finishedAt,
    capabilities: report.capabilities,
    requestedLevel: report.requestedLevel,
    level: report.achievedLevel,
    certifiedCapabilities: verdict.partial
      ? []
      : verdict.claimed.filter((c) =>
          verdict.results.every(
            (r) => r.capability !== c || r.level !== "MUST" || r.outcome === "pass" || (r.outcome === "fail" && r.expectedFailure === true),
          ),
        ),
    partial: verdict.partial,
    certified: report.certified,
    results: report.results.map(({ id, level, capability, outcome, expectedFailure }) => ({
      id,
      level,
      capability,
      outcome,
      ...(expectedFailure ? { expectedFailure } : {}),
    })),
    report: { sha256: createHash("sha256").update(renderJsonReport(report)).digest("hex") },
  };
}

/** The bytes a signature covers: the certificate as the file writes it. */
export function certificateText(certificate: Certificate): string {
  return jsonText(certificate);
}

/** A key that cannot sign or verify certificates: unreadable, not PEM, or not Ed25519. */
export class CertificateKeyError extends Error {
  override readonly name = "CertificateKeyError";
}

/** Reads an Ed25519 private key from PEM text; `where` names it in errors. */
export function signingKey(pem: string, where: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (error) {
    throw new CertificateKeyError(`${where} is not a PEM private key: ${(error as Error).message}`);
  }
  if (key.asymmetricKeyType !== "ed25519")
    throw new CertificateKeyError(
      `${where} is a ${key.asymmetricKeyType ?? "symmetric"} key; certificates are signed with Ed25519 (openssl genpkey -algorithm ed25519)`,
    );
  return key;
}

/** Reads an Ed25519 public key from PEM text (a private key gives its public half); `where` names it in errors. */
export function verifyingKey(pem: string, where: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw new CertificateKeyError(`${where} is not a PEM public key: ${(error as Error).message}`);
  }
  if (key.asymmetricKeyType !== "ed25519")
    throw new CertificateKeyError(`${where} is a ${key.asymmetricKeyType ?? "symmetric"} key; certificates are signed with Ed25519`);
  return key;
}

/** The fingerprint a signature names its key by: sha256 (hex) of the public key's DER. */
export function keyId(key: KeyObject): string {
  const publicKey = key.type === "private" ? createPublicKey(key) : key;
  return createHash("sha256")
    .update(publicKey.export({ type: "spki", format: "der" }))
    .digest("hex");
}

export function buildCertificateFile(report: RunReport, key?: KeyObject): CertificateFile {
  const certificate = buildCertificate(report);
  if (!key) return { certificate };
  const value = sign(null, Buffer.from(certificateText(certificate)), key).toString("base64");
  return { certificate, signature: { algorithm: "Ed25519", keyId: keyId(key), value } };
}

export function renderCertificate(report: RunReport, key?: KeyObject): string {
  return jsonText(buildCertificateFile(report, key));
}

/** The outcome of checking a certificate file. */
export type Verification =
  { valid: true; file: CertificateFile & { signature: CertificateSignature } } | { valid: false; reason: string; file?: CertificateFile };

/**
 * Checks a certificate file against a public key, offline: the file must be exactly as it
 * was written (any changed byte shows), carry an Ed25519 signature by this key, and the
 * signature must hold over the certificate; with `reportText`, the report's sha256 must be
 * the one the certificate names.
 */
export function verifyCertificate(text: string, key: KeyObject, reportText?: string): Verification {
  let file: CertificateFile;
  try {
    file = JSON.parse(text) as CertificateFile;
  } catch (error) {
    return { valid: false, reason: `it is not JSON: ${(error as Error).message}` };
  }
  if (typeof file !== "object" || file === null || typeof file.certificate !== "object" || file.certificate === null)
    return { valid: false, reason: "it holds no certificate" };
  const written = jsonText(file);
  if (written !== text) {
    const at = [...text].findIndex((c, i) => c !== written[i]);
    return {
      valid: false,
      reason: `it is not as it was written: it differs from its own JSON at character ${at === -1 ? Math.min(text.length, written.length) : at}`,
      file,
    };
  }
  const signature = file.signature;
  if (signature === undefined) return { valid: false, reason: "it is not signed (certify writes a signature with --sign-key)", file };
  if (signature.algorithm !== "Ed25519" || typeof signature.value !== "string")
    return { valid: false, reason: `its signature is not an Ed25519 signature (algorithm ${JSON.stringify(signature.algorithm)})`, file };
  // Only the canonical text of the 64 signature bytes: a lenient decoder would take other texts for the same bytes.
  const bytes = Buffer.from(signature.value, "base64");
  if (bytes.length !== 64 || bytes.toString("base64") !== signature.value)
    return { valid: false, reason: "its signature is not the base64 text of an Ed25519 signature", file };
  const given = keyId(key);
  if (signature.keyId !== given)
    return { valid: false, reason: `it was signed by the key ${signature.keyId}, not by the given key ${given}`, file };
  const holds = verify(null, Buffer.from(certificateText(file.certificate)), key, bytes);
  if (!holds)
    return { valid: false, reason: "its signature does not match its contents: the certificate was changed after it was signed", file };
  if (reportText !== undefined) {
    const digest = createHash("sha256").update(reportText).digest("hex");
    if (digest !== file.certificate.report?.sha256)
      return {
        valid: false,
        reason: `the report's sha256 is ${digest}, the certificate names ${file.certificate.report?.sha256 ?? "none"}`,
        file,
      };
  }
  return { valid: true, file: { ...file, signature } };
}
