/**
 * For the tests against real peers: the code generated from an import (written under
 * test/.tmp-constructs/, where `@turnspec/rpc` resolves to this repository's sources, and
 * loaded at run time), a transport that records every frame with its sender, and the
 * check of a whole recorded session by the message checker, in strict mode, with senders.
 */
import { mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { generateFiles, writeToDisk } from "../../packages/generator/src/generate.js";
import { importSource, recognise } from "../../packages/generator/src/import/command.js";
import { ImportMap, readMap } from "../../packages/generator/src/import/map.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import type { JsonObject, ProtocolModel } from "../../packages/generator/src/model.js";
import { compileProtocol } from "../../packages/generator/src/runtime-protocol.js";
import { MessageChecker, type Transport } from "../../packages/rpc/src/index.js";
import { repoRoot, type PublishedSource } from "./published.js";

/** A generated module of an import, untyped here: each protocol has its own types, type-checked in import.test.ts. */
export type Generated = any;

export interface ImportedPeer {
  readonly schemasDir: string;
  readonly model: ProtocolModel;
  readonly client: Generated;
  readonly server: Generated;
  /** Removes the folders written. */
  cleanup(): void;
}

/** Imports a source, generates its code into this repository's test folder, and loads the client and server. */
export async function importedPeer(source: PublishedSource, label: string): Promise<ImportedPeer> {
  const root = JSON.parse(readFileSync(source.file, "utf8")) as JsonObject;
  const { files } = importSource(root, recognise(root)!, new ImportMap(readMap(source.map)), source.file.split("/").at(-1)!);
  const schemasDir = mkdtempSync(join(tmpdir(), `turnspec-${label}-`));
  for (const [name, text] of files) writeFileSync(join(schemasDir, name), text);
  const out = join(repoRoot, "test/.tmp-constructs", `${process.pid}-${label}`);
  writeToDisk(await generateFiles({ schemasDir }), out);
  const [client, server] = await Promise.all([
    import(/* @vite-ignore */ join(out, "client.ts")),
    import(/* @vite-ignore */ join(out, "server.ts")),
  ]);
  return {
    schemasDir,
    model: loadSchemas(schemasDir),
    client,
    server,
    cleanup: () => {
      rmSync(schemasDir, { recursive: true, force: true });
      rmSync(out, { recursive: true, force: true });
      try {
        rmdirSync(dirname(out));
      } catch {
        // another run's folder is still there
      }
    },
  };
}

export interface Frame {
  readonly from: "client" | "server";
  readonly message: unknown;
}

/** A transport whose frames are recorded: what this side sends as `side`, what it receives as the other. */
export function recording(transport: Transport, side: "client" | "server" = "client"): { transport: Transport; frames: Frame[] } {
  const other = side === "client" ? "server" : "client";
  const frames: Frame[] = [];
  const wrapped: Transport = {
    start: () => transport.start(),
    close: () => transport.close(),
    send: (frame) => {
      frames.push({ from: side, message: JSON.parse(frame) });
      return transport.send(frame);
    },
  };
  transport.onmessage = (frame) => {
    frames.push({ from: other, message: JSON.parse(frame) });
    wrapped.onmessage?.(frame);
  };
  transport.onclose = () => wrapped.onclose?.();
  transport.onerror = (error) => wrapped.onerror?.(error);
  return { transport: wrapped, frames };
}

/** Every finding of a recorded session, strict, with its senders: `frame method pointer: message`. */
export function sessionFindings(model: ProtocolModel, frames: readonly Frame[]): string[] {
  const checker = new MessageChecker("strict", { protocol: compileProtocol(model) });
  const found = frames.flatMap((f, i) => checker.check(f.message, i, f.from));
  return [...found, ...checker.end()].map(
    (f) =>
      `${f.index + 1} ${f.method ?? ""} ${f.part}${f.issue.pointer}: ${f.issue.message}${f.issue.received === undefined ? "" : ` (got ${JSON.stringify(f.issue.received).slice(0, 80)})`}`,
  );
}

/** The methods of a session by sender, for what a test drove: `client tools/call`, `server roots/list`. */
export function methodsOf(frames: readonly Frame[]): Set<string> {
  return new Set(
    frames.flatMap((f) =>
      f.message !== null && typeof f.message === "object" && "method" in f.message
        ? [`${f.from} ${String((f.message as { method: string }).method)}`]
        : [],
    ),
  );
}
