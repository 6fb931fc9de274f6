/**
 * What Temporal itself says about a session's runs: each execution of its workflow id with its
 * status, for a failed one the failure and its cause, and whether its history replays on the
 * workflow code that wrote it. The report shows it next to what the API said (a run the API
 * reports as running may have failed long ago). A history that does not replay is a run that any
 * worker without it in its cache can no longer carry on, nor answer a query about.
 */
import { Client, Connection, WorkflowFailedError } from "@temporalio/client";
import { DefaultLogger, Runtime, Worker } from "@temporalio/worker";
import { type RunResult, runWorkflowId } from "../../src/contracts/runs";

export interface ExecutionSummary {
  runId: string;
  status: string;
  startTime: string;
  closeTime?: string;
  /** Failure message chain of a failed execution ("message: cause"). */
  failure?: string;
  /** Why its history does not replay on the run's workflow bundle (a nondeterminism error). */
  replayError?: string;
  /** Texts of the messages a completed execution ended without reading (its result's `unprocessed`). */
  handedBack: string[];
}

function failureChain(error: unknown): string {
  const parts: string[] = [];
  for (let current = error, depth = 0; current instanceof Error && depth < 4; depth++) {
    parts.push(current.message);
    current = current.cause;
  }
  return parts.join(": ");
}

/** Every execution of each session's run workflow, oldest first, keyed by session id. */
export async function describeExecutions(
  address: string,
  namespace: string,
  tenantId: string,
  sessionIds: readonly string[],
  workflowBundlePath: string,
): Promise<Map<string, ExecutionSummary[]>> {
  // The replayer logs every worker state change; only its errors matter here. (Installing fails
  // when this process already has a runtime: its logger is kept then.)
  try {
    Runtime.install({ logger: new DefaultLogger("ERROR") });
  } catch {}
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection, namespace });
    const result = new Map<string, ExecutionSummary[]>();
    for (const sessionId of sessionIds) {
      const workflowId = runWorkflowId({ tenantId, sessionId });
      const executions: ExecutionSummary[] = [];
      for await (const info of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
        const summary: ExecutionSummary = {
          runId: info.runId,
          status: info.status.name,
          startTime: info.startTime.toISOString(),
          ...(info.closeTime ? { closeTime: info.closeTime.toISOString() } : {}),
          handedBack: [],
        };
        const handle = client.workflow.getHandle(workflowId, info.runId, { followRuns: false });
        try {
          await Worker.runReplayHistory(
            { workflowBundle: { codePath: workflowBundlePath } },
            await handle.fetchHistory(),
            `${workflowId}/${info.runId}`,
          );
        } catch (error) {
          summary.replayError = failureChain(error);
        }
        if (info.status.name === "COMPLETED") {
          const result = (await handle.result()) as RunResult;
          summary.handedBack = (result.unprocessed ?? []).map((message) => message.text);
        }
        if (info.status.name === "FAILED") {
          try {
            await handle.result();
          } catch (error) {
            summary.failure = failureChain(error instanceof WorkflowFailedError ? error.cause : error);
          }
        }
        executions.push(summary);
      }
      result.set(
        sessionId,
        executions.sort((a, b) => a.startTime.localeCompare(b.startTime)),
      );
    }
    return result;
  } finally {
    await connection.close();
  }
}

/** `FAILED: <failure> → COMPLETED`: a session's executions in one line. */
export function executionsLine(executions: readonly ExecutionSummary[]): string {
  return executions
    .map((execution) => (execution.failure ? `${execution.status}: ${execution.failure}` : execution.status))
    .join(" → ");
}
