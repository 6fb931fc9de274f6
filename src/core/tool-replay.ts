/**
 * Each built-in tool's replay class, in one table the tools and the workflow both read: a tool
 * takes its class from here, and the workflow (which cannot import the tools themselves) knows
 * from the same table which calls may change the workspace. Pure: no I/O, safe in the workflow
 * bundle.
 */
/**
 * What a durable runner may do when it does not know whether an earlier attempt finished:
 * - `safe`: re-run freely (read-only: read, grep, find, ls);
 * - `idempotent-with-check`: re-run; the tool itself detects that the earlier attempt already
 *   took effect and reports that instead of applying it twice (write, edit);
 * - `unsafe`: never re-run silently; report the unknown outcome to the model instead (bash).
 */
export type ReplayClass = "safe" | "idempotent-with-check" | "unsafe";

export const TOOL_REPLAY_CLASSES = {
  read: "safe",
  grep: "safe",
  find: "safe",
  ls: "safe",
  write: "idempotent-with-check",
  edit: "idempotent-with-check",
  bash: "unsafe",
} as const satisfies Record<string, ReplayClass>;

/**
 * Tools that may change the workspace: every tool that is not safe to re-run (read-only tools
 * are; a tool that may write is not). Snapshots follow batches that ran one; `read-only` blocks them.
 */
export const MUTATING_TOOLS: ReadonlySet<string> = new Set(
  Object.entries(TOOL_REPLAY_CLASSES)
    .filter(([, replay]) => replay !== "safe")
    .map(([name]) => name),
);
