/** A worker declared for one tenant refuses every activity of any other tenant before it runs. */
import { ApplicationFailure } from "@temporalio/activity";
import { servingOnlyTenant } from "../../../src/activities/single-tenant";
import type { ExecuteToolInput, KeelActivities } from "../../../src/contracts/activities";

/** Activities that record what reached them. */
function recordingActivities(reached: string[]): KeelActivities {
  const record = (name: string) => async () => {
    reached.push(name);
    return {} as never;
  };
  return {
    openSession: record("openSession"),
    appendEntries: record("appendEntries"),
    claimWorkspace: record("claimWorkspace"),
    snapshotWorkspace: record("snapshotWorkspace"),
    restoreWorkspace: record("restoreWorkspace"),
    llmTurn: record("llmTurn"),
    executeTool: record("executeTool"),
    describeEnvironment: record("describeEnvironment"),
    watchRunnerCall: record("watchRunnerCall"),
    storeUnclaimedRunnerResult: record("storeUnclaimedRunnerResult"),
    storeTaskResult: record("storeTaskResult"),
    mergeSubAgentWorkspace: record("mergeSubAgentWorkspace"),
    compact: record("compact"),
    branch: record("branch"),
    postChatReply: record("postChatReply"),
    postPauseNotice: record("postPauseNotice"),
    startScheduledRun: record("startScheduledRun"),
    publishWebhookEvent: record("publishWebhookEvent"),
    deliverWebhook: record("deliverWebhook"),
    recordWebhookFailure: record("recordWebhookFailure"),
    awaitScheduledRun: record("awaitScheduledRun"),
    abortScheduledRun: record("abortScheduledRun"),
    listMcpTools: record("listMcpTools"),
    checkTenantBudget: record("checkTenantBudget"),
    startEvalTrial: record("startEvalTrial"),
    judgeEvalTrial: record("judgeEvalTrial"),
  };
}

const toolCall = (tenantId: string): ExecuteToolInput =>
  ({
    tenantId,
    sessionId: "s1",
    slot: { seq: 3, id: "e3", parentId: "e2" },
    toolCallId: "call-1",
  }) as unknown as ExecuteToolInput;

async function refusal(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

test("another tenant's tool call and workspace claim are refused, never run", async () => {
  const reached: string[] = [];
  const activities = servingOnlyTenant("acme", recordingActivities(reached));
  const refused = await refusal(activities.executeTool(toolCall("other")));
  expect(refused.type).toBe("TenantNotServed");
  expect(refused.nonRetryable).toBe(true);
  expect(refused.message).toMatch(/serves tenant acme only.*other/);
  await refusal(activities.claimWorkspace({ tenantId: "other", sessionId: "s1" } as never));
  expect(reached).toEqual([]);
});

test("a restore whose source session is another tenant's is refused", async () => {
  const reached: string[] = [];
  const activities = servingOnlyTenant("acme", recordingActivities(reached));
  await refusal(
    activities.restoreWorkspace({
      ref: { tenantId: "acme", sessionId: "s2" },
      from: { tenantId: "other", sessionId: "s1" },
      entryId: "e1",
    }),
  );
  expect(reached).toEqual([]);
});

test("an input naming no tenant is refused; the served tenant's calls run", async () => {
  const reached: string[] = [];
  const activities = servingOnlyTenant("acme", recordingActivities(reached));
  await refusal(activities.executeTool({} as ExecuteToolInput));
  await activities.executeTool(toolCall("acme"));
  await activities.restoreWorkspace({ ref: { tenantId: "acme", sessionId: "s2" }, entryId: "e1" });
  expect(reached).toEqual(["executeTool", "restoreWorkspace"]);
});
