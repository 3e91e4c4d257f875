/**
 * References inside a schemas folder: a type file as a whole (`tool.json`), the file's own
 * root (`#`, a recursive type) or one of its local definitions (`#/$defs/Node`). Every reader
 * of schemas (the loader's checks, the type and validator emitters, the diff) follows them
 * with this one function.
 */
import type { Json, JsonObject } from "./model.js";
import { isObject } from "./walk.js";

/** Where a `$ref` leads: the file it is in, the JSON pointer inside it, and the schema there. */
export interface RefTarget {
  readonly file: string;
  readonly pointer: string;
  readonly node: JsonObject;
}

/** Splits a `$ref` into the file it names (undefined for a local ref) and its fragment. */
export function splitRef(ref: string): { file: string | undefined; fragment: string } {
  const hash = ref.indexOf("#");
  let file = hash === -1 ? ref : ref.slice(0, hash);
  // An absolute reference (as the validators' schemas have them) names a file of the same flat folder.
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(file)) file = file.slice(file.lastIndexOf("/") + 1);
  return { file: file === "" ? undefined : file, fragment: hash === -1 ? "" : ref.slice(hash + 1) };
}

const unescapeToken = (token: string) => decodeURIComponent(token).replace(/~1/g, "/").replace(/~0/g, "~");

/** The schema at a JSON pointer of a document, or undefined. */
export function atPointer(document: Json, pointer: string): Json | undefined {
  if (pointer === "") return document;
  let node: Json | undefined = document;
  for (const raw of pointer.slice(1).split("/")) {
    const token = unescapeToken(raw);
    node = isObject(node) ? node[token] : Array.isArray(node) ? node[Number(token)] : undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

/**
 * The target of `ref` written in the file `from`: undefined when the file does not exist or
 * the fragment leads nowhere.
 */
export function resolveRef(ref: string, from: string, files: ReadonlyMap<string, { readonly schema: JsonObject }>): RefTarget | undefined {
  const { file, fragment } = splitRef(ref);
  const target = file ?? from;
  const document = files.get(target)?.schema;
  if (!document) return undefined;
  const node = atPointer(document, fragment);
  return isObject(node) ? { file: target, pointer: fragment, node } : undefined;
}

/** Follows a chain of `$ref`-only schemas to the first schema that says more; undefined for a dangling ref or a loop. */
export function followRefs(
  node: Json | undefined,
  from: string,
  files: ReadonlyMap<string, { readonly schema: JsonObject }>,
): RefTarget | undefined {
  let current: RefTarget | undefined = isObject(node) ? { file: from, pointer: "", node } : undefined;
  for (let hops = 0; current && typeof current.node.$ref === "string"; hops++) {
    if (hops > 32) return undefined;
    current = resolveRef(current.node.$ref, current.file, files);
  }
  return current;
}
