#!/usr/bin/env node
// Compiles the `keel` command's client commands into one file, dist/cli/keel.js (esbuild, the
// compiler tsx itself uses), so a call does not transpile ~200 TypeScript modules at start.
// Node packages stay `require`d from node_modules. `keel dev` is not in it: bin/keel.js runs dev
// from the sources (it starts the worker and bundles workflows from src/ anyway).
// dist/cli/inputs.json lists the sources it was built from: bin/keel.js falls back to the sources
// when any of them is newer than the build (an edited checkout never runs stale code).
// Run by `npm run ensure` (and so by `npm run dev` / `npm test`); `node scripts/build-cli.mjs`.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outdir = join(root, "dist/cli");

export async function buildCli() {
  mkdirSync(outdir, { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: ["src/cli/main.ts"],
    outfile: join(outdir, "keel.js"),
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    packages: "external",
    // The dev stack is loaded only by `keel dev`, which bin/keel.js runs from the sources.
    external: ["./dev"],
    sourcemap: "inline",
    metafile: true,
    logLevel: "error",
  });
  const inputs = Object.keys(result.metafile.inputs).filter((path) => !path.startsWith("node_modules/"));
  writeFileSync(join(outdir, "inputs.json"), `${JSON.stringify({ inputs }, null, 1)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildCli();
