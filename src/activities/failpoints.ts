/**
 * Crash points for durability tests: `KEEL_FAILPOINTS=llmTurn.afterWrite,...` makes this worker
 * process kill itself (SIGKILL, no cleanup) when it reaches a named point, to prove that a retry
 * on another worker neither loses nor repeats work. `name@N` kills on the Nth time the point is
 * reached (e.g. after the second of two parallel tool calls). Unset in every real deployment.
 */
export type FailpointName =
  | "llmTurn.afterWrite"
  | "llmTurn.afterUsage"
  | "executeTool.afterWrite"
  | "claimWorkspace.start"
  | "claimWorkspace.afterSource"
  | "listMcpTools.start"
  | "restoreWorkspace.start"
  | "snapshotWorkspace.start"
  | "mergeSubAgentWorkspace.afterApply";

/** How many times each enabled point is passed before it kills (1: the first time). */
const killAt = new Map<string, number>();
const reached = new Map<string, number>();

/** Enables the points of `spec` (the worker's KEEL_FAILPOINTS) in this process; once, at start. */
export function armFailpoints(spec: string | undefined): void {
  for (const item of (spec ?? "").split(",").filter(Boolean)) {
    const [name = "", count] = item.split("@");
    killAt.set(name, count ? Number(count) : 1);
  }
}

export function failpoint(name: FailpointName): void {
  const at = killAt.get(name);
  if (at === undefined) return;
  const times = (reached.get(name) ?? 0) + 1;
  reached.set(name, times);
  if (times >= at) process.kill(process.pid, "SIGKILL");
}
