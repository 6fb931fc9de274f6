#!/usr/bin/env node
// Makes a fresh clone ready to run: installs Node packages when package-lock.json changed since the
// last install (npm ci), bubblewrap for the tool sandbox (scripts/ensure-bubblewrap.mjs), then the
// local servers (scripts/bootstrap.mjs), the Python MCP server the tests call
// (scripts/ensure-mcp-servers.mjs), and compiles the CLI (scripts/build-cli.mjs). Quiet when
// nothing to do. Jaeger is not built here: `keel dev --traces` and the tracing tests build it when
// they first need it (scripts/ensure-jaeger.mjs, minutes of Go compiling a first start without
// traces does not wait for).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const lockHash = createHash("sha256")
  .update(readFileSync(join(root, "package-lock.json")))
  .digest("hex");
const stamp = join(root, "node_modules/.keel-installed");

if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== lockHash) {
  process.stderr.write("keel: installing Node packages (npm ci)\n");
  try {
    execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: root,
      stdio: "inherit",
    });
  } catch {
    process.stderr.write(
      "keel: `npm ci` failed; see the npm output above (Node 20.6+ and npm 10+ are required).\n",
    );
    process.exit(1);
  }
  writeFileSync(stamp, lockHash);
}

// The compiled CLI (dist/cli/keel.js): bin/keel.js runs the sources until it is built.
const { buildCli } = await import("./build-cli.mjs");
await buildCli();

const { bootstrap } = await import("./bootstrap.mjs");
const { ensureBubblewrap } = await import("./ensure-bubblewrap.mjs");
const { ensureMcpServers } = await import("./ensure-mcp-servers.mjs");
ensureBubblewrap();
try {
  bootstrap();
  ensureMcpServers();
} catch (error) {
  process.stderr.write(`keel bootstrap failed: ${error.message}\n`);
  process.exit(1);
}
