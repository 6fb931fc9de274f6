/**
 * A worker dies (SIGKILL) during an MCP call. A tool its server annotates read-only is called
 * again by the next worker; a tool that is not (here: the same tool, classed `unsafe` by the
 * operator's override) is not repeated blindly: the session records that its outcome is unknown.
 */
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import type { McpStdioServer } from "../../../src/mcp/types";
import { runWorkflowId } from "../../../src/workflows/types";
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
