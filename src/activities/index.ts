/** All activities of a worker, wired to the process's dependencies. */

import type { KeelActivities } from "../contracts/activities";
import { branchActivity } from "./branch";
import { chatReplyActivity, pauseNoticeActivity } from "./chat-reply";
import { compactActivity } from "./compact";
import type { ActivityDeps } from "./deps";
import { evalTrialActivities } from "./eval-trials";
import { executeToolActivity } from "./execute-tool";
import { llmTurnActivity } from "./llm-turn";
import { listMcpToolsActivity } from "./mcp-tools";
import { runnerActivities } from "./runner-tool";
import { scheduledRunActivities } from "./scheduled-runs";
import { sessionActivities } from "./session-activities";
import { servingOnlyTenant } from "./single-tenant";
import { subAgentMergeActivity } from "./sub-agent-merge";
import { taskResultActivity } from "./task-result";
import { checkTenantBudgetActivity } from "./tenant-budget";
import { webhookActivities } from "./webhooks";
import { workspaceActivities } from "./workspace-activities";

export type { ActivityDeps } from "./deps";

/** Every activity; with `deps.singleTenant` set, each refuses calls of any other tenant. */
export function createActivities(deps: ActivityDeps): KeelActivities {
  const activities: KeelActivities = {
    ...sessionActivities(deps),
    ...workspaceActivities(deps),
    llmTurn: llmTurnActivity(deps),
    executeTool: executeToolActivity(deps),
    ...runnerActivities(deps),
    storeTaskResult: taskResultActivity(deps),
    mergeSubAgentWorkspace: subAgentMergeActivity(deps),
    compact: compactActivity(deps),
    branch: branchActivity(deps),
    postChatReply: chatReplyActivity(deps),
    postPauseNotice: pauseNoticeActivity(deps),
    ...scheduledRunActivities(deps),
    listMcpTools: listMcpToolsActivity(deps),
    checkTenantBudget: checkTenantBudgetActivity(deps),
    ...webhookActivities(deps),
    ...evalTrialActivities(deps),
  };
  return deps.singleTenant === undefined ? activities : servingOnlyTenant(deps.singleTenant, activities);
}
