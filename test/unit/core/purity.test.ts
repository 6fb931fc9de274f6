import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as core from "../../../src/core";

const CORE_DIR = join(__dirname, "../../../src/core");

describe("src/core purity", () => {
  const files = readdirSync(CORE_DIR).filter((name) => name.endsWith(".ts"));

  it.each(files)("%s imports nothing but zod and core modules", (name) => {
    const source = readFileSync(join(CORE_DIR, name), "utf8");
    const imports = [...source.matchAll(/^(?:import|export)\b[^;]*?from "([^"]+)";/gm)].map((m) => m[1]);
    expect(imports.length > 0 || !/^import /m.test(source)).toBe(true);
    for (const specifier of imports) expect(specifier === "zod" || specifier!.startsWith("./")).toBe(true);
  });

  it.each(files)("%s uses no clock, ambient randomness or process state", (name) => {
    const source = readFileSync(join(CORE_DIR, name), "utf8");
    expect(source).not.toMatch(
      /Date\.now\(|Math\.random\(|new Date\(\)|process\.|performance\.|setTimeout|require\(/,
    );
  });

  it("exports the pieces through the barrel", () => {
    for (const name of [
      "parseSession",
      "buildContext",
      "runCleanupLoop",
      "prepareCompaction",
      "makeEntryId",
      "appendEvent",
      "enqueue",
      "importPartsSession",
      "convertToLlm",
    ]) {
      expect(typeof (core as Record<string, unknown>)[name]).toBe("function");
    }
  });
});
