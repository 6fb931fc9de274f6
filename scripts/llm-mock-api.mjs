#!/usr/bin/env node
// Installs `llm-mock-api` (PyPI; an OpenAI / Anthropic / Responses mock server Keel did not
// write) with its dependencies into the git-ignored `.keel/tools/llm-mock-api/`, for the tests
// that check Keel's providers against a server other than Keel's own. Idempotent: a stamp file
// names the installed version; a new install goes to a temporary folder first and is renamed
// into place, so a concurrent or interrupted install never leaves a half-filled folder behind.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PipInstallError, pipInstall, pythonWithPip } from "./pip-install.mjs";

export const LLM_MOCK_API_VERSION = "0.1.2";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, ".keel/tools/llm-mock-api");
const stampFile = join(target, ".installed");

/**
 * Makes sure llm-mock-api is installed; returns how to start it: the Python interpreter and
 * the `PYTHONPATH` holding the package and its dependencies.
 */
export function ensureLlmMockApi() {
  const py = pythonWithPip(
    "Python 3 with pip is required to install llm-mock-api (install python3 and python3-pip).",
  );
  const ready = () => existsSync(stampFile) && readFileSync(stampFile, "utf8") === LLM_MOCK_API_VERSION;
  if (!ready()) {
    const staging = `${target}.tmp-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    process.stderr.write(
      `keel: installing llm-mock-api==${LLM_MOCK_API_VERSION} from PyPI into .keel/tools\n`,
    );
    try {
      pipInstall(py, { specs: [`llm-mock-api==${LLM_MOCK_API_VERSION}`], target: staging });
      writeFileSync(join(staging, ".installed"), LLM_MOCK_API_VERSION);
      if (!ready()) {
        rmSync(target, { recursive: true, force: true });
        renameSync(staging, target);
      }
    } catch (error) {
      if (!(error instanceof PipInstallError)) throw error;
      throw new Error(`Installing llm-mock-api==${LLM_MOCK_API_VERSION} from PyPI failed:\n${error.detail}`);
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
