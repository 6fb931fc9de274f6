/**
 * The cluster's smoke run: one session through the API address whose model (the local LLM server)
 * calls `ls` once and then answers, its tool run by a worker; and one on the runners' environment,
 * its tool run by a `keel runner`. Both must complete.
 */
import { postMessage, registerScenario, waitForRunEnd } from "./api-runs";
import { RUNNER_ENVIRONMENT, TENANT_KEYS } from "./layout";

const SMOKE_SCENARIO = "cluster-smoke";
const SMOKE_TIMEOUT_MS = 120_000;

/** Runs both smoke sessions; resolves with a line saying how they ended, fails when one did not complete. */
export async function smokeRun(): Promise<string> {
  await registerScenario(SMOKE_SCENARIO, {
    turns: [
      { text: "Listing the workspace.", toolCalls: [{ name: "ls", arguments: { path: "." } }] },
      { text: "The workspace is listed." },
    ],
  });
  const prompt = `[scenario:${SMOKE_SCENARIO}] list the workspace`;
  const onWorker = await postMessage(TENANT_KEYS.load, prompt);
  const onRunner = await postMessage(TENANT_KEYS.runners, prompt, {
    body: { environment: RUNNER_ENVIRONMENT },
  });
  const [workerEnd, runnerEnd] = await Promise.all([
    waitForRunEnd(TENANT_KEYS.load, onWorker, SMOKE_TIMEOUT_MS),
    waitForRunEnd(TENANT_KEYS.runners, onRunner, SMOKE_TIMEOUT_MS),
  ]);
  const line = `worker session ${onWorker.sessionId} ${workerEnd.status} (${workerEnd.reason}), runner session ${onRunner.sessionId} ${runnerEnd.status} (${runnerEnd.reason})`;
  if (workerEnd.status !== "completed" || runnerEnd.status !== "completed")
    throw new Error(`smoke run failed: ${line}`);
  return line;
}
