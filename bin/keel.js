#!/usr/bin/env node
// The `keel` command. Client commands run from dist/cli/keel.js, compiled by `npm run ensure`
// (scripts/build-cli.mjs), when it is newer than every source it was built from; otherwise, and
// always for `keel dev`, the TypeScript sources run through tsx's CommonJS loader.
const { readFileSync, statSync } = require("node:fs");
const { join } = require("node:path");

const root = join(__dirname, "..");
const compiled = join(root, "dist/cli/keel.js");

/** Whether the compiled CLI exists and no source it was built from changed since. */
function compiledIsCurrent() {
  try {
    const built = statSync(compiled).mtimeMs;
    const { inputs } = JSON.parse(readFileSync(join(root, "dist/cli/inputs.json"), "utf8"));
    return inputs.every((input) => statSync(join(root, input)).mtimeMs <= built);
  } catch {
    return false;
  }
}

if (process.argv[2] !== "dev" && process.env.KEEL_CLI_SOURCES !== "1" && compiledIsCurrent()) {
  require(compiled).cli();
} else {
  require("tsx/cjs");
  require("../src/cli/main.ts").cli();
}
