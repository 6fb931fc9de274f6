/**
 * A run's outcome where a Temporal UI user looks first. Temporal reports every run that ended on
 * its own as Completed (the run handles its own failures and aborts), so the outcome is in the
 * run's current details (the UI's "User Metadata"), led by the status and why, and in the
 * `KeelStatus` search attribute a list query filters on; the static summary is the prompt.
 */
import { workflowMetadataQuery } from "@temporalio/workflow";
import { runWorkflowId } from "../../../src/contracts/runs";
import { RunStatusAttribute } from "../../../src/workflows/search-attributes";
import { eventually, modelCalled, runStageForSuite } from "../../support/run-harness";

const stage = runStageForSuite();

async function outcomeShown(ref: { tenantId: string; sessionId: string }) {
  const handle = stage().client.workflow.getHandle(runWorkflowId(ref));
  const description = await handle.describe();
  const metadata = await handle.query(workflowMetadataQuery);
  return {
    temporalStatus: description.status.name,
    keelStatus: description.typedSearchAttributes.get(RunStatusAttribute),
    summary: await description.staticSummary(),
    details: metadata.currentDetails,
  };
}

/** The runs listed by a `KeelStatus` query (visibility is eventually consistent: waited for). */
async function listedWith(status: string, sessionId: string): Promise<void> {
  const query = `KeelStatus = "${status}" AND KeelSession = "${sessionId}"`;
  const listed = async () => {
    const found: string[] = [];
    for await (const execution of stage().client.workflow.list({ query })) found.push(execution.workflowId);
    return found.length === 1 ? found : undefined;
  };
  await eventually(listed, 30_000, `a run listed by ${query}`);
}

test("a completed run: Completed in Temporal, completed in its details and KeelStatus", async () => {
  stage().llm.addScenario("outcome-done", { turns: [], after: { text: "all done" } });
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:outcome-done] say done", mode: "auto" },
    stage().settings(),
  );
  expect((await stage().result(ref)).status).toBe("completed");
  const shown = await outcomeShown(ref);
  expect(shown).toMatchObject({ temporalStatus: "COMPLETED", keelStatus: "completed" });
  expect(shown.summary).toContain("say done");
  expect(shown.details).toMatch(/^\*\*completed\*\* \(the agent finished\) · turn 1 · 0 tool calls/);
  await listedWith("completed", ref.sessionId);
});

test("an aborted run: Completed in Temporal, aborted (and why) in its details and KeelStatus", async () => {
  stage().llm.addScenario("outcome-hung", { turns: [], after: { text: "never" } });
  stage().llm.addFaults([{ kind: "hang", match: { scenario: "outcome-hung" } }]);
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:outcome-hung] think", mode: "auto" },
    stage().settings(),
  );
  await modelCalled(stage(), "outcome-hung");
  expect(await stage().runs.signalAbort(ref, "user pressed stop")).toBe("sent");
  expect((await stage().result(ref)).status).toBe("aborted");
  const shown = await outcomeShown(ref);
  expect(shown).toMatchObject({ temporalStatus: "COMPLETED", keelStatus: "aborted" });
  expect(shown.details).toMatch(/^\*\*aborted\*\* \(user pressed stop\) · turn 1/);
  await listedWith("aborted", ref.sessionId);
});

test("a failed run: Completed in Temporal, failed (and why) in its details and KeelStatus", async () => {
  stage().llm.addScenario("outcome-refused", { turns: [], after: { text: "never" } });
  stage().llm.addFaults([{ kind: "unauthorized", match: { scenario: "outcome-refused" } }]);
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:outcome-refused] go", mode: "auto" },
    stage().settings(),
  );
  expect((await stage().result(ref)).status).toBe("failed");
  const shown = await outcomeShown(ref);
  expect(shown).toMatchObject({ temporalStatus: "COMPLETED", keelStatus: "failed" });
  expect(shown.details).toMatch(/^\*\*failed\*\* \(model error: .+\) · turn 1/);
  await listedWith("failed", ref.sessionId);
});
