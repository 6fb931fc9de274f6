import { Client } from "@temporalio/client";
import { TestWorkflowEnvironment } from "@temporalio/testing";
import { Worker } from "@temporalio/worker";
import { toolPaths } from "../../../src/cli/devstack/tools";
import {
  clientConnection,
  createTestWorker,
  temporalNamespace,
  uniqueName,
  workflowBundlePath,
} from "../../support/integration-env";
import { greetBySignal, nameSignal, sleepOneDay } from "../../support/workflows";

describe("real Temporal dev server", () => {
  test("a workflow waits for a signal, runs an activity and returns its result", async () => {
    const taskQueue = uniqueName("proof");
    const activityInputs: string[] = [];
    const { worker, connection } = await createTestWorker({
      taskQueue,
      activities: {
        async echo(text: string) {
          activityInputs.push(text);
          return text.toUpperCase();
        },
      },
    });
    const clientConn = await clientConnection();
    try {
      const client = new Client({ connection: clientConn, namespace: temporalNamespace() });
      const result = await worker.runUntil(async () => {
        const handle = await client.workflow.start(greetBySignal, {
          taskQueue,
          workflowId: uniqueName("greet"),
        });
        await handle.signal(nameSignal, "keel");
        return handle.result();
      });
      expect(result).toBe("HELLO KEEL");
      expect(activityInputs).toEqual(["hello keel"]);
    } finally {
      await clientConn.close();
      await connection.close();
    }
  });
});

describe("time-skipping test server from the installed binary", () => {
  let env: TestWorkflowEnvironment;

  beforeAll(async () => {
    env = await TestWorkflowEnvironment.createTimeSkipping({
      server: { executable: { type: "existing-path", path: toolPaths().temporalTestServer } },
    });
  });

  afterAll(async () => {
    await env?.teardown();
  });

  test("a one-day timer completes in far less than a day of wall-clock time", async () => {
    const taskQueue = uniqueName("timer");
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { codePath: workflowBundlePath() },
    });
    const startedAt = Date.now();
    const sleptMs = await worker.runUntil(
      env.client.workflow.execute(sleepOneDay, { taskQueue, workflowId: uniqueName("sleep") }),
    );
    expect(sleptMs).toBeGreaterThanOrEqual(24 * 60 * 60 * 1000);
    expect(Date.now() - startedAt).toBeLessThan(60_000);
  });
});
