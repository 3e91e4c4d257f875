/**
 * `turnspec generate --lang python`: a Python package for the protocol, thin over its support
 * modules (written beside it, so that it needs pydantic and nothing of turnspec):
 *
 * - models.py: pydantic v2 models (models.ts); validators.py: the checks (checks.ts);
 * - registry.py: the method, notification and error tables; codec.py: decode and encode;
 * - client.py and server.py: asyncio endpoints with typed handlers for both directions (rpc.ts);
 * - ordering.py: the protocol's ordering rules over the support module's engine;
 * - testee.py: the contract testee (`python -m <package>.testee`);
 * - the support modules _wire.py, _messages.py, _rpc.py, _ordering.py, _transport.py, _testee.py.
 */
import { readFileSync } from "node:fs";
import type { GeneratedFile } from "../../generate.js";
import type { MethodModel, NotificationModel, ProtocolModel } from "../../model.js";
import { namedParams } from "../../compose.js";
import { emitPythonChecks } from "./checks.js";
import { PythonModels } from "./models.js";
import { pyLiteral, pyString, usedImport } from "./names.js";
import { emitPythonClient, emitPythonServer } from "./rpc.js";

/** The support modules, copied as they are (with the generated header) into every package. */
export const PYTHON_SUPPORT = ["_wire.py", "_messages.py", "_rpc.py", "_ordering.py", "_transport.py", "_testee.py"] as const;

const templates = new URL("../../../templates/python/", import.meta.url);

export interface PythonOptions {
  /** The header comment every file starts with (a `#` line). */
  readonly header: string;
}

/** Every file of the Python package, paths relative to the package folder. */
export function emitPython(model: ProtocolModel, options: PythonOptions): GeneratedFile[] {
  // `# fmt: off` before any code: black and ruff format leave the file as written, so that a
  // formatter run over the user's project does not make `generate --check` report it changed.
  const header = `${options.header}\n# fmt: off`;
  const models = new PythonModels(model);
  const files: GeneratedFile[] = [
    { path: "models.py", content: models.emit(header) },
    { path: "validators.py", content: emitPythonChecks(model, header) },
    { path: "registry.py", content: registry(model, header) },
    { path: "codec.py", content: codec(model, header) },
    { path: "ordering.py", content: ordering(model, header) },
    { path: "client.py", content: emitPythonClient(model, header) },
    { path: "server.py", content: emitPythonServer(model, header) },
    { path: "testee.py", content: testee(header) },
    { path: "__init__.py", content: init(model, header) },
    { path: "py.typed", content: "" },
  ];
  for (const name of PYTHON_SUPPORT) {
    const source = readFileSync(new URL(name, templates), "utf8");
    files.push({
      path: name,
      content: `${header}\n# turnspec's support module for generated Python, the same in every generated package.\n${source}`,
    });
  }
  return files
    .map((f) => ({ ...f, content: f.content === "" ? "" : `${f.content.replace(/\n{4,}/g, "\n\n\n").trimEnd()}\n` }))
    .sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** The keyword arguments of a registry entry that differ from their defaults: how params are sent. */
export function paramsArguments(m: MethodModel | NotificationModel, model: ProtocolModel): string[] {
  const out: string[] = [];
  if (m.paramsOptional) out.push("params_optional=True");
  if (m.paramStructure !== "by-name") out.push(`param_structure=${pyString(m.paramStructure)}`);
  const names = paramNames(m, model);
  if (names !== undefined) out.push(`param_names=(${names.map(pyString).join(", ")}${names.length === 1 ? "," : ""})`);
  return out;
}

/** For an "either" message whose params are an object of named params: their names in the order of their positions. */
export function paramNames(m: MethodModel | NotificationModel, model: ProtocolModel): string[] | undefined {
  if (m.paramStructure !== "either" || m.params === undefined) return undefined;
  const type = model.types.find((t) => t.title === m.params)!;
  return namedParams(type.schema, type.file, model);
}

function registry(model: ProtocolModel, header: string): string {
  const entry = (kind: string, args: readonly string[]) => `${kind}(${args.join(", ")})`;
  const methods = model.methods.map(
    (m) =>
      `    ${pyString(m.name)}: ${entry("MethodEntry", [pyString(m.direction), m.params === undefined ? "None" : pyString(m.params), pyString(m.result), `(${m.errors.map(pyString).join(", ")}${m.errors.length === 1 ? "," : ""})`, ...paramsArguments(m, model), ...(m.errorData === undefined ? [] : [`error_data=${pyString(m.errorData)}`])])},`,
  );
  const notifications = model.notifications.map(
    (n) =>
      `    ${pyString(n.name)}: ${entry("NotificationEntry", [pyString(n.direction), n.params === undefined ? "None" : pyString(n.params), ...paramsArguments(n, model)])},`,
  );
  const errors = model.errors.map(
    (e) =>
      `    ${pyString(e.reason)}: ErrorEntry(${e.code}, ${e.anyMethod ? "True" : "False"}${e.data === undefined ? "" : `, data=${pyString(e.data)}`}),`,
  );
  const literal = (names: readonly string[]) => (names.length ? `Literal[${names.map(pyString).join(", ")}]` : "Never");
  return [
    header,
    `"""The tables of ${model.title} ${model.version}: every method, notification and error, as protocol.json and errors.json declare them."""`,
    "",
    "from __future__ import annotations",
    "",
    ...usedImport(
      "typing",
      ["Final", "Literal", "Never"],
      [
        ...methods,
        ...notifications,
        literal(model.methods.map((m) => m.name)),
        literal(model.notifications.map((n) => n.name)),
        "Final",
      ].join("\n"),
    ),
    "",
    "from ._messages import ErrorEntry, MethodEntry, NotificationEntry, ProtocolTables",
    "from .validators import validate",
    "",
    `TITLE: Final = ${pyString(model.title)}`,
    `VERSION: Final = ${pyString(model.version)}`,
    `DIGEST: Final = ${pyString(model.digest)}`,
    '"""sha256 over the schemas folder this package was generated from."""',
    "",
    `MethodName = ${literal(model.methods.map((m) => m.name))}`,
    `NotificationName = ${literal(model.notifications.map((n) => n.name))}`,
    `ErrorReason = ${literal(model.errors.map((e) => e.reason))}`,
    "",
    "METHODS: Final[dict[str, MethodEntry]] = {",
    ...methods,
    "}",
    "",
    "NOTIFICATIONS: Final[dict[str, NotificationEntry]] = {",
    ...notifications,
    "}",
    "",
    "ERRORS: Final[dict[str, ErrorEntry]] = {",
    ...errors,
    "}",
    "",
    `PROTOCOL: Final = ProtocolTables(TITLE, METHODS, NOTIFICATIONS, ERRORS, validate${model.batches ? "" : ", batches=False"})`,
    '"""The protocol as one value, for the message checker and the endpoints."""',
    "",
  ].join("\n");
}

function codec(model: ProtocolModel, header: string): string {
  return [
    header,
    '"""Decoding JSON text into the models (parse, validate strict or tolerant, build) and encoding them as canonical JSON."""',
    "",
    "from __future__ import annotations",
    "",
    "from typing import Any, Final, TypeVar",
    "",
    "from pydantic import TypeAdapter",
    "",
    "from . import models",
    "from ._wire import Mode, ValidationFailed, WireModel, encode, parse_json",
    "from .validators import TypeName, validate",
    "",
    '__all__ = ["TYPES", "decode", "decode_model", "decode_value", "encode"]',
    "",
    "TYPES: Final[dict[str, Any]] = {",
    ...model.types.map((t) => `    ${pyString(t.title)}: models.${t.title},`),
    "}",
    '"""The Python type of each named type."""',
    "",
    "_adapters: dict[str, TypeAdapter[Any]] = {}",
    "",
    'M = TypeVar("M", bound=WireModel)',
    "",
    "",
    'def decode_value(type_name: TypeName | str, value: object, mode: Mode = "strict") -> Any:',
    '    """The model of a parsed JSON value, after its validation in ``mode``; raises ValidationFailed."""',
    "    issues = validate(type_name, value, mode)",
    "    if issues:",
    "        raise ValidationFailed(type_name, issues)",
    "    adapter = _adapters.get(type_name)",
    "    if adapter is None:",
    "        adapter = _adapters[type_name] = TypeAdapter(TYPES[type_name])",
    "    return adapter.validate_python(value)",
    "",
    "",
    'def decode(type_name: TypeName | str, text: str | bytes, mode: Mode = "strict") -> Any:',
    '    """The model of JSON text; raises JsonTextError or ValidationFailed."""',
    "    return decode_value(type_name, parse_json(text), mode)",
    "",
    "",
    'def decode_model(cls: type[M], text: str | bytes, mode: Mode = "strict") -> M:',
    '    """An instance of a generated model class (of a named type) from JSON text."""',
    "    if TYPES.get(cls.__name__) is not cls:",
    '        raise TypeError(f"{cls.__name__} is not a named type of this protocol")',
    "    value = parse_json(text)",
    "    issues = validate(cls.__name__, value, mode)",
    "    if issues:",
    "        raise ValidationFailed(cls.__name__, issues)",
    "    return cls.model_validate(value)",
    "",
  ].join("\n");
}

function ordering(model: ProtocolModel, header: string): string {
  return [
    header,
    `"""The ordering rules of ${model.title} ${model.version} as protocol.json declares them, and a checker that enforces them on a stream of frames."""`,
    "",
    "from __future__ import annotations",
    "",
    "from typing import Final",
    "",
    "from ._ordering import OrderingChecker, OrderingRule, OrderingViolation",
    "",
    '__all__ = ["ORDERING_RULES", "OrderingChecker", "OrderingViolation", "create_ordering_checker"]',
    "",
    "ORDERING_RULES: Final[tuple[OrderingRule, ...]] = (",
    ...model.ordering.map((r) => `    ${pyLiteral(r.rule)},`),
    ")",
    '"""Every rule, its scope keys as JSON pointers and each notification set listed."""',
    "",
    "",
    "def create_ordering_checker() -> OrderingChecker:",
    '    """A fresh checker of the protocol\'s ordering rules."""',
    "    return OrderingChecker(ORDERING_RULES)",
    "",
  ].join("\n");
}

function testee(header: string): string {
  return [
    header,
    `"""The contract testee of this package: \`python -m <package>.testee\` answers the harness's commands on stdin (docs/languages.md)."""`,
    "",
    "from __future__ import annotations",
    "",
    "from ._testee import serve_testee",
    "from .codec import decode",
    "from .ordering import create_ordering_checker",
    "from .registry import PROTOCOL",
    "",
    "",
    "def main() -> None:",
    '    """Reads commands until the end of standard input."""',
    `    serve_testee(PROTOCOL, decode, create_ordering_checker)`,
    "",
    "",
    'if __name__ == "__main__":',
    "    main()",
    "",
  ].join("\n");
}

function init(model: ProtocolModel, header: string): string {
  return [
    header,
    `"""${model.title} ${model.version}, generated from its schemas: pydantic models, validators (strict or tolerant), an asyncio client and server, transports and the ordering checker.`,
    "",
    "    from this_package import models, codec",
    '    params = codec.decode_model(models.SomeParams, text, "tolerant")',
    '"""',
    "",
    "from __future__ import annotations",
    "",
    "from ._wire import JsonTextError, Mode, ValidationFailed, ValidationIssue, canonical_json, encode, parse_json",
    "from .codec import decode, decode_model, decode_value",
    "from .registry import DIGEST, TITLE, VERSION",
    "from .validators import TypeName, assert_valid, is_valid, validate",
    "",
    "__all__ = [",
    ...[
      "DIGEST",
      "JsonTextError",
      "Mode",
      "TITLE",
      "TypeName",
      "VERSION",
      "ValidationFailed",
      "ValidationIssue",
      "assert_valid",
      "canonical_json",
      "decode",
      "decode_model",
      "decode_value",
      "encode",
      "is_valid",
      "parse_json",
      "validate",
    ].map((n) => `    ${pyString(n)},`),
    "]",
    "",
  ].join("\n");
}
