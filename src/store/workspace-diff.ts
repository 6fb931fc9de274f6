/**
 * What changed between two recorded workspace states: each state flattened to its paths (files
 * with their content hash and mode, links with their text, directories), and the paths whose
 * entry differs. Used to carry a sub-agent's edits back into its parent's workspace
 * (activities/sub-agent-merge.ts).
 */
import type { SessionRef } from "./session-keys";
import type { WorkspaceSnapshots } from "./workspace-snapshots";

/** One path of a recorded state. */
export type PathEntry =
  | { type: "file"; hash: string; mode: number }
  | { type: "symlink"; target: string }
  | { type: "dir"; mode: number };

/** A recorded state as workspace-relative paths (POSIX separators) to their entries. */
export type FlatState = ReadonlyMap<string, PathEntry>;

/** Reads the state whose root tree is `root` (objects of `ref`'s session) as paths. */
export async function flattenState(
  snapshots: Pick<WorkspaceSnapshots, "getTree">,
  ref: SessionRef,
  root: string,
): Promise<FlatState> {
  const state = new Map<string, PathEntry>();
  const visit = async (treeHash: string, prefix: string): Promise<void> => {
    const tree = await snapshots.getTree(ref, treeHash);
    for (const entry of tree.entries) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.type === "file") state.set(relative, { type: "file", hash: entry.hash, mode: entry.mode });
      else if (entry.type === "symlink") state.set(relative, { type: "symlink", target: entry.target });
      else {
        state.set(relative, { type: "dir", mode: entry.mode });
        await visit(entry.tree, relative);
      }
    }
  };
  await visit(root, "");
  return state;
}

/** Whether two entries record the same thing (a directory's mode is not compared). */
export function sameEntry(a: PathEntry | undefined, b: PathEntry | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.type === "file" && b.type === "file") return a.hash === b.hash && a.mode === b.mode;
  if (a.type === "symlink" && b.type === "symlink") return a.target === b.target;
  return a.type === "dir" && b.type === "dir";
}

/** A path that differs from `base` in `changed`: its entry there, or `undefined` when removed. */
export interface PathChange {
  path: string;
  before: PathEntry | undefined;
  after: PathEntry | undefined;
}

/**
 * The paths whose entry differs between `base` and `changed`, in an order that applies cleanly:
 * removals deepest first, then additions and changes shallowest first (a directory before what
 * it holds). A directory removed with everything in it is one change per path.
 */
export function diffStates(base: FlatState, changed: FlatState): PathChange[] {
  const removed: PathChange[] = [];
  const added: PathChange[] = [];
  for (const [path, before] of base) if (!changed.has(path)) removed.push({ path, before, after: undefined });
  for (const [path, after] of changed) {
    const before = base.get(path);
    if (!sameEntry(before, after)) added.push({ path, before, after });
  }
  const depth = (path: string) => path.split("/").length;
  removed.sort((a, b) => depth(b.path) - depth(a.path) || a.path.localeCompare(b.path));
  added.sort((a, b) => depth(a.path) - depth(b.path) || a.path.localeCompare(b.path));
  return [...removed, ...added];
}
