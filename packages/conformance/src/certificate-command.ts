/**
 * `turnspec certificate verify FILE --key PUB`: checks a certificate offline against the
 * public key of whoever signed it (the vendor, or a certifying party), and, with
 * `--report FILE`, that the JSON report is the one it names. Exit codes: 0 the certificate
 * holds, 1 it does not (the reason is printed), 2 a file or key that cannot be read.
 */
import { readFileSync } from "node:fs";
import { CertificateKeyError, verifyCertificate, verifyingKey } from "./report/certificate.js";
import { levelNames } from "./report/format.js";

export interface VerifyArgs {
  readonly file: string;
  /** The signer's public key, PEM (a private key's public half is used when given one). */
  readonly key: string;
  /** The JSON report of the run, to check against the digest the certificate names. */
  readonly report?: string;
}

const out = (text: string) => process.stdout.write(`${text}\n`);

function read(path: string, what: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CertificateKeyError(`cannot read the ${what} ${path}: ${code === "ENOENT" ? "no such file" : (error as Error).message}`);
  }
}

export function runCertificateVerify(args: VerifyArgs): number {
  let text: string;
  let result: ReturnType<typeof verifyCertificate>;
  try {
    text = read(args.file, "certificate");
    const key = verifyingKey(read(args.key, "key"), args.key);
    result = verifyCertificate(text, key, args.report === undefined ? undefined : read(args.report, "report"));
  } catch (error) {
    if (!(error instanceof CertificateKeyError)) throw error;
    process.stderr.write(`turnspec certificate verify: ${error.message}\n`);
    return 2;
  }
  if (!result.valid) {
    process.stderr.write(`turnspec certificate verify: ${args.file} does not verify: ${result.reason}\n`);
    return 1;
  }
  const { certificate, signature } = result.file;
  const subject = certificate.subject;
  const what = [subject.name, subject.command ?? subject.url].filter(Boolean).join(", ");
  const verdict = certificate.partial
    ? "a partial run (certifies nothing)"
    : certificate.certified
      ? `certified ${levelNames[certificate.level]} for ${certificate.certifiedCapabilities.join(", ")}`
      : `not certified (${levelNames[certificate.level]} achieved, ${levelNames[certificate.requestedLevel === "core" ? "core" : "full"]} requested)`;
  out(`${args.file}: valid, signed by key ${signature.keyId}`);
  out(`  ${certificate.subject.kind} ${what || "(unnamed)"}`);
  out(`  ${certificate.suite.name} suite ${certificate.suite.version}, ${certificate.date}: ${verdict}`);
  out(
    `  ${certificate.results.length} requirements; report sha256 ${certificate.report.sha256}${args.report === undefined ? "" : ` (matches ${args.report})`}`,
  );
  return 0;
}
