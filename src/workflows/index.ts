/** Workflow code registered with workers (the workflow bundle's entry point). */
export { agentRun } from "./agent-run";
export { evalRun } from "./eval-run";
export { scheduledRun } from "./scheduled-run";
export { branchSession, compactSession, labelSession } from "./session-maintenance";
export { webhookDelivery } from "./webhook-delivery";
