/**
 * turnspec's own meta-schemas (packages/generator/meta/: protocol.json, errors.json and the config
 * file) are valid JSON Schema 2020-12 and compile under ajv's strict mode. The generator
 * compiles them without checking them against JSON Schema's meta-schema on every run; this
 * is where that check lives.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";

const metaDir = fileURLToPath(new URL("../../packages/generator/meta/", import.meta.url));
const files = readdirSync(metaDir).filter((f) => f.endsWith(".json"));

describe("the generator's meta-schemas", () => {
  it("holds the protocol, errors and config meta-schemas", () => {
    expect(files.sort()).toEqual(["config.schema.json", "errors.schema.json", "import-map.schema.json", "protocol.schema.json"]);
  });

  it.each(files)("%s is valid JSON Schema 2020-12 and compiles in strict mode", (file) => {
    const schema = JSON.parse(readFileSync(`${metaDir}${file}`, "utf8")) as object;
    const ajv = new Ajv2020({ strict: true, discriminator: true, allErrors: true });
    expect(ajv.validateSchema(schema), JSON.stringify(ajv.errors)).toBe(true);
    expect(() => ajv.compile(schema)).not.toThrow();
  });
});
