/**
 * The directions between the packages (docs/README.md, "Directions between the packages"),
 * as an ESLint rule: a package imports only the packages it may use, each by its name; an
 * import against a direction, or one that reaches into another package's files by a relative
 * path, is reported with the reason the design gives. Static imports, re-exports, dynamic import()
 * with a literal specifier and `import("…")` types are all checked.
 */
import { dirname, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Each package's folder, its name, the packages it may import, and why it may not import the others. */
export const PACKAGES = [
  {
    dir: "packages/rpc",
    name: "@turnspec/rpc",
    may: [],
    why: "rpc is JSON-RPC for every protocol: it depends on no other package and knows no protocol",
  },
  { dir: "generated", name: "@turnspec/protocol", may: ["@turnspec/rpc"], why: "the generated code of the protocol stands on rpc alone" },
  {
    dir: "packages/generator",
    name: "@turnspec/generator",
    may: ["@turnspec/rpc"],
    why: "the generator works on any schemas folder: it knows no gateway, no suite and not this protocol's generated code",
  },
  {
    dir: "packages/gateway",
    name: "@turnspec/gateway",
    may: ["@turnspec/rpc", "@turnspec/protocol"],
    why: "the reference gateway uses rpc and the protocol's generated code; it imports neither the conformance suite nor the client",
  },
  {
    dir: "packages/conformance",
    name: "@turnspec/conformance",
    may: ["@turnspec/rpc", "@turnspec/protocol"],
    why: "the conformance suite trusts nothing it tests: it uses rpc and the protocol's generated code only",
  },
  {
    dir: "packages/client",
    name: "@turnspec/client",
    may: ["@turnspec/rpc", "@turnspec/protocol"],
    why: "the client SDK uses rpc and the protocol's generated code; it never imports the gateway",
  },
  {
    dir: "packages/inspect",
    name: "@turnspec/inspect",
    may: ["@turnspec/rpc", "@turnspec/protocol", "@turnspec/client"],
    why: "the inspector uses rpc, the protocol's generated code and the client SDK, and holds no protocol facts of its own",
  },
  {
    dir: "packages/turnspec",
    name: "turnspec",
    may: [
      "@turnspec/rpc",
      "@turnspec/protocol",
      "@turnspec/generator",
      "@turnspec/gateway",
      "@turnspec/conformance",
      "@turnspec/client",
      "@turnspec/inspect",
    ],
    why: "only the command line uses every package",
  },
];

const NAMES = new Set(PACKAGES.map((p) => p.name));

/** The package a file belongs to, or undefined for a file outside the packages (tests, benchmarks, scripts). */
function packageOf(file) {
  const path = relative(root, file).split(sep).join("/");
  return PACKAGES.find((p) => path === p.dir || path.startsWith(`${p.dir}/`));
}

/** The workspace package a bare specifier names ("@turnspec/gateway/serve" → "@turnspec/gateway"), if it names one. */
function packageNamed(specifier) {
  const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0];
  return NAMES.has(name) ? name : undefined;
}

export const packageDirections = {
  meta: {
    type: "problem",
    docs: { description: "Packages import one another only in the directions docs/README.md gives, and only by name" },
    schema: [],
    messages: {
      direction: '{{from}} may not import {{to}}: {{why}} (docs/README.md, "Directions between the packages")',
      relative: "{{from}} reaches into {{to}}'s files by a relative path ({{specifier}}): import what the package exports, by its name",
      self: "{{from}} imports itself by name ({{specifier}}): inside a package, import its modules by relative path",
    },
  },
  create(context) {
    const file = context.physicalFilename ?? context.filename;
    const from = packageOf(file);
    if (from === undefined) return {};
    const check = (node, specifier) => {
      if (typeof specifier !== "string") return;
      if (specifier.startsWith(".")) {
        const target = packageOf(resolve(dirname(file), specifier));
        const inside = relative(resolve(root, from.dir), resolve(dirname(file), specifier));
        if (inside.startsWith("..") || target !== from) {
          context.report({
            node,
            messageId: "relative",
            data: { from: from.name, to: target?.name ?? "a folder outside the package", specifier },
          });
        }
        return;
      }
      const to = packageNamed(specifier);
      if (to === undefined) return;
      if (to === from.name) context.report({ node, messageId: "self", data: { from: from.name, specifier } });
      else if (!from.may.includes(to)) context.report({ node, messageId: "direction", data: { from: from.name, to, why: from.why } });
    };
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => node.source.type === "Literal" && check(node.source, node.source.value),
      TSImportType: (node) => {
        const argument = node.argument?.type === "TSLiteralType" ? node.argument.literal : node.source;
        if (argument?.type === "Literal") check(argument, argument.value);
      },
    };
  },
};

export default { rules: { "package-directions": packageDirections } };
