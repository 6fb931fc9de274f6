#!/usr/bin/env node
import { execFileSync } from "node:child_process";
// Installs the Python MCP server the tests call (mcp-server-time, pinned in
// scripts/tool-versions.json under "mcpServers") and the Python packages the tests verify with
// ("testPython": standardwebhooks, the Standard Webhooks reference a webhook receiver checks
// signatures with) with their dependencies from PyPI into
// .keel/tools/mcp-python. It runs inside the tool sandbox, which sees only the system's own
// folders: so it is installed for the system Python (/usr/bin/python3) when that has pip, and the
// interpreter used is recorded beside it (`.installed`). Idempotent and quiet when in place.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { pipInstall, pythonWithPip } from "./pip-install.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pinned = JSON.parse(readFileSync(join(root, "scripts/tool-versions.json"), "utf8"));
const versions = { ...pinned.mcpServers, ...pinned.testPython };
export const MCP_PYTHON_DIR = join(root, ".keel/tools/mcp-python");
const stampFile = join(MCP_PYTHON_DIR, ".installed");

function systemPython() {
  for (const candidate of ["/usr/bin/python3", "/usr/local/bin/python3"]) {
    try {
      execFileSync(candidate, ["-m", "pip", "--version"], { stdio: "ignore" });
      return candidate;
    } catch {
      // next
    }
  }
  return pythonWithPip("Python 3 with pip is required to install the MCP test server mcp-server-time.");
}

export function ensureMcpServers() {
  const wanted = JSON.stringify(versions);
  if (existsSync(stampFile) && JSON.parse(readFileSync(stampFile, "utf8")).versions === wanted) return;
  const python = systemPython();
  const specs = Object.entries(versions).map(([name, version]) => `${name}==${version}`);
  process.stderr.write(`keel: installing ${specs.join(", ")} from PyPI into .keel/tools/mcp-python\n`);
  rmSync(MCP_PYTHON_DIR, { recursive: true, force: true });
  mkdirSync(MCP_PYTHON_DIR, { recursive: true });
  pipInstall(python, { specs, target: MCP_PYTHON_DIR });
  writeFileSync(stampFile, JSON.stringify({ versions: wanted, python }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    ensureMcpServers();
  } catch (error) {
    process.stderr.write(`keel: installing the MCP test servers failed: ${error.message}\n`);
    process.exit(1);
  }
}
