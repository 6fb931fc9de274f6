/**
 * Directory walking for grep and find: depth-first in name order, honouring `.gitignore` files
 * (each applies to its own subtree, as in git), always skipping `.git`, never following
 * symbolic links. Every directory is listed through a descriptor held open while its entries
 * are visited, and every subdirectory, file and `.gitignore` is opened relative to it without
 * following a link (workspace-fs.ts), so a name swapped for a link mid-walk is skipped, never
 * followed out of the workspace.
 */
import type { Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import * as path from "node:path";
import ignore, { type Ignore } from "ignore";
import { ToolError } from "./tool-error";
import { openDirAt, openFileAt, readDirAt, type WorkspaceFs } from "./workspace-fs";

/**
 * Directories deeper than this below the start are not entered: the walk holds one descriptor
 * per level, and a tree nested thousands deep must not use up the worker's descriptors.
 */
export const MAX_WALK_DEPTH = 100;

interface WalkEntry {
  /** Path relative to the walk's start directory, POSIX separators. */
  relative: string;
  isDirectory: boolean;
  /**
   * Opens the entry as a regular file, without following a link (fails when it is not one, or
   * no longer). Valid only until the visit returns.
   */
  open(): Promise<{ handle: FileHandle; stats: Stats }>;
}

/** Called for each entry in walk order; returning "stop" ends the walk. */
export type Visit = (entry: WalkEntry) => Promise<"stop" | undefined>;

interface IgnoreRule {
  /** Directory holding the .gitignore, relative to the workspace root ("" for the root). */
  base: string;
  rules: Ignore;
}

const rule = (base: string, text: string): IgnoreRule => ({ base, rules: ignore().add(text) });

/** The `.gitignore` of a held directory; a link, a non-file or an unreadable one is no rule. */
async function loadGitignore(dirFd: number, base: string): Promise<IgnoreRule | undefined> {
  const opened = await openFileAt(dirFd, ".gitignore").catch(() => undefined);
  if (!opened) return undefined;
  try {
    return rule(base, (await opened.handle.readFile()).toString("utf8"));
  } catch {
    return undefined;
  } finally {
    await opened.handle.close();
  }
}

function isIgnored(rules: IgnoreRule[], fromRoot: string, isDirectory: boolean): boolean {
  return rules.some((rule) => {
    const sub = rule.base === "" ? fromRoot : path.posix.relative(rule.base, fromRoot);
    if (sub === "" || sub.startsWith("..")) return false;
    return rule.rules.ignores(isDirectory ? `${sub}/` : sub);
  });
}

/**
 * Walks the directory at `start` (a path argument; links inside the workspace on the way to it
 * are followed, none below it), calling `visit` for every directory and regular file that no
 * `.gitignore` excludes. The .gitignore files of `start`'s ancestors up to the workspace root
 * apply as well. Fails as the layer does when `start` is missing (ENOENT), not a directory
 * (ENOTDIR) or refused (WorkspacePathError); unreadable directories below it are skipped.
 */
export async function walk(
  ws: WorkspaceFs,
  start: string,
  visit: Visit,
  signal?: AbortSignal,
): Promise<void> {
  await ws.withDir(start, { links: "inside" }, async (startFd, startRelative) => {
    const startFromRoot = startRelative === "." ? "" : startRelative;
    const ancestors = startFromRoot === "" ? [] : startFromRoot.split("/");
    const inherited: IgnoreRule[] = [];
    for (let depth = 0; depth < ancestors.length; depth++) {
      const base = ancestors.slice(0, depth).join("/");
      const text = await ws
        .readFile(base === "" ? ".gitignore" : `${base}/.gitignore`, { links: "refuse" })
        .catch(() => undefined);
      if (text) inherited.push(rule(base, text.toString("utf8")));
    }

    async function visitDir(
      dirFd: number,
      fromRoot: string,
      fromStart: string,
      rules: IgnoreRule[],
      depth: number,
    ): Promise<"stop" | undefined> {
      if (signal?.aborted) throw new ToolError("Operation aborted");
      const own = await loadGitignore(dirFd, fromRoot);
      const active = own ? [...rules, own] : rules;
      const entries = await readDirAt(dirFd).catch(() => undefined);
      if (!entries) return undefined; // unreadable directory: skipped, as ripgrep does
      for (const entry of entries) {
        if (entry.name === ".git" || entry.isSymbolicLink()) continue;
        const isDirectory = entry.isDirectory();
        if (!isDirectory && !entry.isFile()) continue;
        const childFromRoot = fromRoot === "" ? entry.name : `${fromRoot}/${entry.name}`;
        if (isIgnored(active, childFromRoot, isDirectory)) continue;
        const relative = fromStart === "" ? entry.name : `${fromStart}/${entry.name}`;
        const open = () => openFileAt(dirFd, entry.name);
        if ((await visit({ relative, isDirectory, open })) === "stop") return "stop";
        if (!isDirectory || depth >= MAX_WALK_DEPTH) continue;
        // Gone, or swapped for a link or a file since it was listed: skipped.
        const child = await openDirAt(dirFd, entry.name).catch(() => undefined);
        if (!child) continue;
        try {
          if ((await visitDir(child.fd, childFromRoot, relative, active, depth + 1)) === "stop")
            return "stop";
        } finally {
          await child.close();
        }
      }
      return undefined;
    }
    await visitDir(startFd, startFromRoot, "", inherited, 0);
  });
}

/** Refuses a glob that could name something outside the search directory. */
export function assertConfinedGlob(glob: string, argument: string): void {
  if (glob.includes("\0"))
    throw new ToolError(`${argument} ${JSON.stringify(glob)} refused: it contains a NUL byte.`);
  if (glob.startsWith("/") || /^[A-Za-z]:[\\/]/.test(glob)) {
    throw new ToolError(
      `${argument} ${JSON.stringify(glob)} refused: it must be relative to the search directory (use the path argument to choose a directory).`,
    );
  }
  if (glob.split(/[\\/]/).includes("..")) {
    throw new ToolError(`${argument} ${JSON.stringify(glob)} refused: ".." is not allowed in patterns.`);
  }
}
