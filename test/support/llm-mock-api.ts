/**
 * `llm-mock-api` (PyPI), an OpenAI / Anthropic / Responses mock server written by others, started
 * as a child process on a free port with a rules file. Installed on first use by
 * scripts/llm-mock-api.mjs into `.keel/tools/llm-mock-api/`.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort, waitForPort } from "../../src/cli/devstack/ports";

const projectRoot = resolve(__dirname, "../..");
const STARTUP_TIMEOUT_MS = 60_000;
/** Installing from PyPI on a fresh machine takes about a minute. */
export const LLM_MOCK_API_INSTALL_TIMEOUT_MS = 300_000;

export interface LlmMockApi {
  /** For the `openai` SDK. */
  openaiBaseURL: string;
  /** For `@anthropic-ai/sdk`. */
  anthropicBaseURL: string;
  output(): string;
  close(): Promise<void>;
}

/** Installs llm-mock-api if needed; returns the folder to put on PYTHONPATH. */
function installedPath(): string {
  return execFileSync(process.execPath, [join(projectRoot, "scripts/llm-mock-api.mjs")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    timeout: LLM_MOCK_API_INSTALL_TIMEOUT_MS,
  }).trim();
}

/**
 * Starts llm-mock-api with `rules` (its JSON rules format: `{rules: [{when, reply | replies}],
 * fallback?}`), streaming without artificial latency.
 */
export async function startLlmMockApi(rules: object): Promise<LlmMockApi> {
  const pythonPath = installedPath();
  const folder = mkdtempSync(join(tmpdir(), "llm-mock-api-"));
  const rulesFile = join(folder, "rules.json");
  writeFileSync(rulesFile, JSON.stringify(rules));
  const port = await freePort();
  const child: ChildProcess = spawn(
    "python3",
    [
      "-c",
      "from llm_mock_api.cli import main; main()",
      "start",
      "--config",
      join(folder, "no-config.json"),
      "-p",
      String(port),
      "-r",
      rulesFile,
      "-l",
      "0",
      "-c",
      "0",
      "--log-level",
      "error",
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PYTHONPATH: pythonPath } },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  try {
    await waitForPort(port, STARTUP_TIMEOUT_MS, () => child.exitCode === null);
  } catch (error) {
    child.kill("SIGKILL");
    throw new Error(`llm-mock-api did not start: ${(error as Error).message}\n${output}`);
  }
  const url = `http://127.0.0.1:${port}`;
  return {
    openaiBaseURL: `${url}/v1`,
    anthropicBaseURL: url,
    output: () => output,
    async close() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
