/**
 * A worker dies (SIGKILL) during an MCP call. A tool its server annotates read-only is called
 * again by the next worker; a tool that is not (here: the same tool, classed `unsafe` by the
 * operator's override) is not repeated blindly: the session records that its outcome is unknown.
 * A worker that dies while it lists the run's servers leaves the listing to the next worker.
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { temporal } from "@temporalio/proto";
import { runWorkflowId } from "../../../src/contracts/runs";
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import type { McpStdioServer } from "../../../src/mcp/types";
import { testTmpDir } from "../../support/integration-env";
import { everythingServer, MCP_WORKER_ENV } from "../../support/mcp-servers";
import {
  createRunStage,
  eventually,
  expectIntactSession,
  messagesOf,
  type RunStage,
} from "../../support/run-harness";

let stage: RunStage;

// A takeover waits for the dead worker's heartbeat timeout and its queue's schedule-to-start.
jest.setTimeout(120_000);

beforeAll(async () => {
  stage = await createRunStage();
});

// A test that failed before stopping its workers leaves none behind for the next one.
afterEach(async () => {
  await stage?.stopWorkers();
});

afterAll(async () => {
  await stage?.close();
});

async function killDuringCall(scenario: string, server: McpStdioServer) {
  stage.llm.addScenario(scenario, {
    turns: [
      {
        toolCalls: [
          { name: "everything__trigger-long-running-operation", arguments: { duration: 6, steps: 6 } },
        ],
      },
    ],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const first = await stage.startWorker(MCP_WORKER_ENV);
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: `[scenario:${scenario}] go`, mode: "auto" },
    stage.settings({ mcpServers: [server] }),
  );
  await eventually(async () => {
    const state = await stage.runs.state(ref);
    return state?.pendingToolCalls.some((call) => call.state === "running") ? true : undefined;
  });
  // Well inside the call (it takes 6 s).
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await first.kill();
  const second = await stage.startWorker(MCP_WORKER_ENV);
  expect((await stage.result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage, ref));
  const history = await stage.client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
  const attempts = (history.events ?? []).flatMap((event) =>
    event.activityTaskStartedEventAttributes ? [event.activityTaskStartedEventAttributes.attempt ?? 1] : [],
  );
  await second.stop();
  return { result: messages.find((message) => message.role === "toolResult"), attempts };
}

test("killed during a read-only MCP call: the next worker calls it again", async () => {
  const { result, attempts } = await killDuringCall("mcp-kill-readonly", everythingServer());
  expect(result).toMatchObject({ isError: false });
  expect(JSON.stringify(result?.content)).toContain("Long running operation completed");
  expect(Math.max(...attempts)).toBeGreaterThan(1);
});

test("killed during an MCP call that is not safe to repeat: it is not repeated, the outcome is unknown", async () => {
  const { result } = await killDuringCall(
    "mcp-kill-unsafe",
    everythingServer({ replay: { "trigger-long-running-operation": "unsafe" } }),
  );
  expect(result).toMatchObject({ isError: true, content: [{ type: "text", text: UNKNOWN_OUTCOME_TEXT }] });
});

test("killed while it lists the run's MCP servers: the listing follows the workspace to another worker", async () => {
  stage.llm.addScenario("mcp-kill-listing", {
    turns: [{ toolCalls: [{ name: "everything__echo", arguments: { message: "listed elsewhere" } }] }],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const first = await stage.startWorker({ ...MCP_WORKER_ENV, KEEL_FAILPOINTS: "listMcpTools.start" });
  const ref = stage.newSession();
  await stage.runs.deliver(
    ref,
    { text: "[scenario:mcp-kill-listing] go", mode: "auto" },
    stage.settings({ mcpServers: [everythingServer()] }),
  );
  await first.exited();
  // Another workspace folder, so another worker queue: nobody takes the listing's retry on the
  // dead worker's queue, and it times out before it starts (not retried by Temporal).
  const second = await stage.startWorker({
    ...MCP_WORKER_ENV,
    KEEL_WORKSPACE_ROOT: mkdtempSync(join(testTmpDir(), "listing-workspaces-")),
  });
  const result = await stage.result(ref);
  await second.stop();
  expect(result.status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage, ref));
  const toolResult = messages.find((message) => message.role === "toolResult");
  expect(toolResult).toMatchObject({ isError: false });
  expect(JSON.stringify(toolResult?.content)).toContain("listed elsewhere");
  const history = await stage.client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
  const events = history.events ?? [];
  const listingQueues = events.flatMap((event) => {
    const scheduled = event.activityTaskScheduledEventAttributes;
    return scheduled?.activityType?.name === "listMcpTools" ? [scheduled.taskQueue?.name] : [];
  });
  // Listed on the dead worker's queue, then on the next worker's.
  expect(new Set(listingQueues).size).toBe(2);
  expect(listingQueues[0]).toBe(first.ownTaskQueue);
  expect(listingQueues.at(-1)).toBe(second.ownTaskQueue);
  const timedOut = events.flatMap((event) => {
    const timeoutType = event.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType;
    return timeoutType ? [timeoutType] : [];
  });
  expect(timedOut).toContain(temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START);
});
