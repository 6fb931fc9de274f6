/**
 * A session's workspace diff: what its tools changed, from the workspace its first tool call
 * found (the recorded workspace source, or an empty folder) to the workspace at its leaf, as a
 * list of changed paths and one unified diff (`git apply`-style `a/` and `b/` names). Read from the
 * workspace snapshots (content-addressed trees and blobs); nothing is restored to disk.
 *
 * Bounded, since it runs in the API process on a caller's request: a file over MAX_FILE_BYTES on
 * either side (measured before it is read), or one holding a NUL byte, is named without its
 * lines; so is a file whose line diff does not finish within FILE_DIFF_TIMEOUT_MS (two large
 * files with little in common cost the line diff the product of their sizes, and it blocks the
 * event loop while it runs) or that comes after the patch spent PATCH_DIFF_BUDGET_MS diffing
 * (`omitted: "too-complex"`); the patch stops at `maxPatchChars` and says so (`truncated`).
 */
import { createTwoFilesPatch } from "diff";
import type { SessionEntry } from "../core/session-types";
import type { SessionRef } from "./session-keys";
import type { SessionStore } from "./session-store";
import { diffStates, type FlatState, flattenState, type PathEntry } from "./workspace-diff";
import { snapshotAncestry, snapshotForAncestry } from "./workspace-lookup";
import type { WorkspaceSnapshots } from "./workspace-snapshots";

/** Largest file whose lines the patch shows (either side). */
const MAX_FILE_BYTES = 1024 * 1024;
/** Default bound of the patch text. */
const DEFAULT_MAX_PATCH_CHARS = 200_000;
/** Longest one file's line diff may run (synchronously: nothing else of the API runs meanwhile). */
const FILE_DIFF_TIMEOUT_MS = 200;
/** Longest the line diffs of one patch may run in all; later files are named without their lines. */
const PATCH_DIFF_BUDGET_MS = 1_000;

type PathChangeKind = "added" | "modified" | "deleted";
/** Why a file's lines are left out of the patch. */
type Omitted = "binary" | "too-large" | "too-complex";
const OMITTED_TEXT: Record<Omitted, string> = {
  binary: "binary",
  "too-large": "too large",
  "too-complex": "too many differences to compute",
};

interface ChangedPath {
  path: string;
  change: PathChangeKind;
  /** What the path is after the change (before it, for a deletion). */
  type: PathEntry["type"];
  /** Set when the patch names the file without its lines: `binary`, `too-large` or `too-complex`. */
  omitted?: Omitted;
}

export interface WorkspacePatch {
  /** The entry whose recorded state the diff starts from; null: an empty folder. */
  baseEntryId: string | null;
  /** The entry whose recorded state the diff ends at; null: none recorded (no changes). */
  leafEntryId: string | null;
  files: ChangedPath[];
  /** Unified diff of the changed files (directories and links are listed in `files` only). */
  patch: string;
  /** The patch stopped at the bound: some files' lines are missing from it. */
  truncated: boolean;
}

type FoundState = { from: SessionRef; entryId: string; state: FlatState } | undefined;

/** The recorded state that applies to `entryId` (across forks), flattened; undefined when none. */
async function stateAt(
  store: SessionStore,
  snapshots: WorkspaceSnapshots,
  ref: SessionRef,
  entries: readonly SessionEntry[],
  entryId: string,
): Promise<FoundState> {
  const ancestry = snapshotAncestry(entries, entryId);
  const found = ancestry ? await snapshotForAncestry(store, snapshots, ref, ancestry) : undefined;
  if (!found) return undefined;
  const state = await flattenState(snapshots, found.from, found.record.root);
  return { from: found.from, entryId: found.record.afterEntryId, state };
}

/** The assistant entry of the first tool call on the path from the root to `leafId`. */
function firstToolCallOnPath(entries: readonly SessionEntry[], leafId: string): SessionEntry | undefined {
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  let first: SessionEntry | undefined;
  const seen = new Set<string>();
  for (let entry = byId.get(leafId); entry && !seen.has(entry.id); ) {
    seen.add(entry.id);
    if (entry.type === "message" && entry.message.role === "assistant") {
      if (entry.message.content.some((block) => block.type === "toolCall")) first = entry;
    }
    entry = entry.parentId === null ? undefined : byId.get(entry.parentId);
  }
  return first;
}

/** A file's text for the patch, or why its lines are left out. */
async function fileText(
  snapshots: WorkspaceSnapshots,
  ref: SessionRef,
  entry: PathEntry | undefined,
): Promise<{ text: string } | { omitted: Omitted }> {
  if (entry?.type !== "file") return { text: "" };
  if ((await snapshots.blobSize(ref, entry.hash)) > MAX_FILE_BYTES) return { omitted: "too-large" };
  const bytes = await snapshots.getBlob(ref, entry.hash);
  if (bytes.includes(0)) return { omitted: "binary" };
  return { text: bytes.toString("utf8") };
}

/** The workspace diff of `ref`'s session at its leaf (see the module's contract). */
export async function sessionWorkspacePatch(
  store: SessionStore,
  snapshots: WorkspaceSnapshots,
  ref: SessionRef,
  maxPatchChars = DEFAULT_MAX_PATCH_CHARS,
): Promise<WorkspacePatch> {
  const entries = (await store.readEntries(ref, { untilGap: true })).entries.map((stored) => stored.entry);
  const leaf = entries.at(-1);
  const empty = { baseEntryId: null, leafEntryId: null, files: [], patch: "", truncated: false };
  const firstCall = leaf ? firstToolCallOnPath(entries, leaf.id) : undefined;
  if (!leaf || !firstCall) return empty;
  const after = await stateAt(store, snapshots, ref, entries, leaf.id);
  if (!after) return empty;
  const before = await stateAt(store, snapshots, ref, entries, firstCall.id);
  const changes = diffStates(before?.state ?? new Map(), after.state);
  const files: ChangedPath[] = [];
  const parts: string[] = [];
  let length = 0;
  let truncated = false;
  let diffMsLeft = PATCH_DIFF_BUDGET_MS;
  for (const { path, before: old, after: now } of changes) {
    const change: PathChangeKind = old === undefined ? "added" : now === undefined ? "deleted" : "modified";
    const shown = (now ?? old) as PathEntry;
    const listed: ChangedPath = { path, change, type: shown.type };
    files.push(listed);
    if (old?.type !== "file" && now?.type !== "file") continue;
    if (truncated) continue;
    const [oldText, newText] = await Promise.all([
      before ? fileText(snapshots, before.from, old) : Promise.resolve({ text: "" }),
      fileText(snapshots, after.from, now),
    ]);
    let lines: string | undefined;
    if ("omitted" in oldText) listed.omitted = oldText.omitted;
    else if ("omitted" in newText) listed.omitted = newText.omitted;
    else if (diffMsLeft <= 0) listed.omitted = "too-complex";
    else {
      const began = Date.now();
      lines = createTwoFilesPatch(
        old?.type === "file" ? `a/${path}` : "/dev/null",
        now?.type === "file" ? `b/${path}` : "/dev/null",
        oldText.text,
        newText.text,
        undefined,
        undefined,
        { context: 3, timeout: Math.min(FILE_DIFF_TIMEOUT_MS, diffMsLeft) },
      )?.replace(/^=+\n/, "");
      diffMsLeft -= Date.now() - began;
      if (lines === undefined) listed.omitted = "too-complex";
    }
    const part =
      lines ??
      `diff a/${path} b/${path}\n(${OMITTED_TEXT[listed.omitted ?? "too-complex"]}: lines not shown)\n`;
    if (length + part.length > maxPatchChars) {
      truncated = true;
      continue;
    }
    parts.push(part);
    length += part.length;
  }
  return {
    baseEntryId: before?.entryId ?? null,
    leafEntryId: after.entryId,
    files,
    patch: parts.join(""),
    truncated,
  };
}
