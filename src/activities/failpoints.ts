/**
 * Crash points for durability tests: `KEEL_FAILPOINTS=llmTurn.afterWrite,...` makes this worker
 * process kill itself (SIGKILL, no cleanup) when it reaches a named point, to prove that a retry
 * on another worker neither loses nor repeats work. Unset in every real deployment.
 */
export type FailpointName = "llmTurn.afterWrite" | "executeTool.afterWrite" | "claimWorkspace.start";

const enabled = new Set((process.env.KEEL_FAILPOINTS ?? "").split(",").filter(Boolean));

export function failpoint(name: FailpointName): void {
  if (enabled.has(name)) process.kill(process.pid, "SIGKILL");
}
