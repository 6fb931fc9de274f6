/**
 * Workflow references for clients: each workflow's registered type name, checked at compile time
 * against the functions the workflow bundle exports (`./index.ts`), and its function type for the
 * Temporal client's generics. Imports are type-only, so a client loads no workflow code.
 */
import type * as workflows from "./index";

/** The workflows the bundle registers, by name. */
export type Workflows = typeof workflows;

/** The type name a worker registers each workflow under: its exported function's name. */
export const WorkflowType = {
  agentRun: "agentRun",
  evalRun: "evalRun",
  scheduledRun: "scheduledRun",
  branchSession: "branchSession",
  compactSession: "compactSession",
  labelSession: "labelSession",
  webhookDelivery: "webhookDelivery",
} as const satisfies { [Name in keyof Workflows]: Name };
