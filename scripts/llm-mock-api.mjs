#!/usr/bin/env node
// Installs `llm-mock-api` (PyPI; an OpenAI / Anthropic / Responses mock server Keel did not
// write) with its dependencies into the git-ignored `.keel/tools/llm-mock-api/`, for the tests
// that check Keel's providers against a server other than Keel's own. Idempotent: a stamp file
// names the installed version; a new install goes to a temporary folder first and is renamed
// into place, so a concurrent or interrupted install never leaves a half-filled folder behind.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const LLM_MOCK_API_VERSION = "0.1.2";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, ".keel/tools/llm-mock-api");
const stampFile = join(target, ".installed");

function python() {
  for (const candidate of ["python3", "python"]) {
    try {
      execFileSync(candidate, ["-m", "pip", "--version"], { stdio: "ignore" });
      return candidate;
    } catch {
      // try the next name
    }
  }
  throw new Error("Python 3 with pip is required to install llm-mock-api (install python3 and python3-pip).");
}

/**
 * Makes sure llm-mock-api is installed; returns how to start it: the Python interpreter and
 * the `PYTHONPATH` holding the package and its dependencies.
 */
export function ensureLlmMockApi() {
  const py = python();
  const ready = () => existsSync(stampFile) && readFileSync(stampFile, "utf8") === LLM_MOCK_API_VERSION;
  if (!ready()) {
    const staging = `${target}.tmp-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    process.stderr.write(
      `keel: installing llm-mock-api==${LLM_MOCK_API_VERSION} from PyPI into .keel/tools\n`,
    );
    try {
      execFileSync(
        py,
        [
          "-m",
          "pip",
          "install",
          "--quiet",
          "--disable-pip-version-check",
          "--only-binary",
          ":all:",
          "--target",
          staging,
          `llm-mock-api==${LLM_MOCK_API_VERSION}`,
        ],
        { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, PIP_ROOT_USER_ACTION: "ignore" } },
      );
      writeFileSync(join(staging, ".installed"), LLM_MOCK_API_VERSION);
      if (!ready()) {
        rmSync(target, { recursive: true, force: true });
        renameSync(staging, target);
      }
    } catch (error) {
      const detail = String(error.stderr ?? error.message)
        .trim()
        .split("\n")
        .slice(-3)
        .join("\n");
      throw new Error(`Installing llm-mock-api==${LLM_MOCK_API_VERSION} from PyPI failed:\n${detail}`);
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }
  return { python: py, pythonPath: target };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const { pythonPath } = ensureLlmMockApi();
    process.stdout.write(`${pythonPath}\n`);
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
