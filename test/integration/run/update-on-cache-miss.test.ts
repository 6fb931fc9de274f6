/**
 * A steering message that reaches a run while its worker is dead, taken in one workflow task
 * together with a new event by a worker that holds the run in its cache only because it answered
 * a state query (the sequence the chaos long form found; docs/architecture.md, "Messages to a live
 * run are signals"). Sent as an update, the SDK could record the task's command before the
 * update's acceptance and then fail to replay its own history; sent as a signal, as the client
 * does now, the history replays and the run completes.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "@temporalio/worker";
import { runWorkflowId } from "../../../src/contracts/runs";
import { workspaceFor } from "../../../src/tools/workspace";
import { stateQuery } from "../../../src/workflows/definitions";
import { workflowBundlePath } from "../../support/integration-env";
import { eventually, expectIntactSession, messagesOf, runStageForSuite } from "../../support/run-harness";

const stage = runStageForSuite({ workersPerTest: true });
test("a steering message while the worker is dead: recorded as pending, taken by the next worker, the history replays", async () => {
  stage().llm.addScenario("steer-dead-worker", {
    turns: [
      { toolCalls: [{ name: "bash", arguments: { command: "echo started > started.txt; sleep 30" } }] },
    ],
    after: { text: "You said: {{lastUser}}" },
  });
  const first = await stage().startWorker({ KEEL_SANDBOX: "off", KEEL_SINGLE_TENANT: stage().tenantId });
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:steer-dead-worker] go", mode: "auto" },
    stage().settings(),
  );
  const handle = stage().client.workflow.getHandle(runWorkflowId(ref));
  // The bash call runs.
  const marker = join(workspaceFor(stage().workspaceRoot, ref.tenantId, ref.sessionId).dir, "started.txt");
  await eventually(async () => (existsSync(marker) ? true : undefined));
  // Clients keep asking the run's state, as the API does for each GET.
  let querying = true;
  const queries = (async () => {
    while (querying) {
      await handle.query(stateQuery).catch(() => undefined);
      await sleep(300);
    }
  })();
  await first.kill();
  // The signal is recorded; no worker answers the delivery query within its wait.
  const steered = await stage().runs.deliver(
    ref,
    { text: "change of plan", mode: "steer" },
    stage().settings(),
  );
  expect(steered.delivery).toBe("pending");
  // The bash call times out and is answered by the next worker (unknown outcome), which has
  // meanwhile cached the run answering a query.
  await stage().startWorker({ KEEL_SANDBOX: "off", KEEL_SINGLE_TENANT: stage().tenantId });
  const ended = await Promise.race([
    stage()
      .result(ref)
      .then((result) => result.status),
    sleep(60_000).then(() => "not ended within 60 s"),
  ]);
  querying = false;
  await queries;
  expect(ended).toBe("completed");
  const history = await handle.fetchHistory();
  const events = history.events ?? [];
  // Only the start carried an update; the steering message is a signal.
  expect(events.filter((event) => event.workflowExecutionUpdateAcceptedEventAttributes)).toHaveLength(1);
  expect(
    events.filter((event) => event.workflowExecutionSignaledEventAttributes?.signalName === "deliverMessage"),
  ).toHaveLength(1);
  await Worker.runReplayHistory({ workflowBundle: { codePath: workflowBundlePath() } }, history, "steer");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const userTexts = messages
    .filter((message) => message.role === "user")
    .map((message) => JSON.stringify(message.content));
  expect(userTexts).toHaveLength(2);
  expect(userTexts[1]).toContain("change of plan");
}, 180_000);
