/**
 * Directory walking for grep and find: depth-first in name order, honouring `.gitignore` files
 * (each applies to its own subtree, as in git), always skipping `.git`, never following
 * symbolic links (a link could lead out of the workspace).
 */
import type { Dirent } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import ignore, { type Ignore } from "ignore";
import { ToolError } from "./types";

export interface WalkEntry {
  /** Absolute path. */
  absolute: string;
  /** Path relative to the walk's start directory, POSIX separators. */
  relative: string;
  isDirectory: boolean;
}

interface IgnoreRule {
  /** Directory holding the .gitignore, relative to the workspace root ("" for the root). */
  base: string;
  rules: Ignore;
}

const toPosix = (p: string): string => p.split(path.sep).join("/");

async function loadGitignore(dirAbsolute: string, base: string): Promise<IgnoreRule | undefined> {
  try {
    const text = await fs.readFile(path.join(dirAbsolute, ".gitignore"), "utf8");
    return { base, rules: ignore().add(text) };
  } catch {
    return undefined;
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
 * Walks `start` (a directory or a single file) inside the workspace whose real root is
 * `rootReal`. The .gitignore files of `start`'s ancestors up to the root apply as well.
 */
export async function* walk(
  rootReal: string,
  start: string,
  signal?: AbortSignal,
): AsyncGenerator<WalkEntry> {
  const stats = await fs.stat(start);
  if (!stats.isDirectory()) {
    yield { absolute: start, relative: path.basename(start), isDirectory: false };
    return;
  }
  const inherited: IgnoreRule[] = [];
  const startFromRoot = toPosix(path.relative(rootReal, start));
  const ancestors = startFromRoot === "" ? [] : startFromRoot.split("/");
  for (let depth = 0; depth < ancestors.length; depth++) {
    const base = ancestors.slice(0, depth).join("/");
    const rule = await loadGitignore(path.join(rootReal, base), base);
    if (rule) inherited.push(rule);
  }

  async function* visit(
    dirAbsolute: string,
    fromRoot: string,
    rules: IgnoreRule[],
  ): AsyncGenerator<WalkEntry> {
    if (signal?.aborted) throw new ToolError("Operation aborted");
    const own = await loadGitignore(dirAbsolute, fromRoot);
    const active = own ? [...rules, own] : rules;
    let entries: Dirent[];
    try {
      entries = await fs.readdir(dirAbsolute, { withFileTypes: true });
    } catch {
      return; // unreadable directory: skipped, as ripgrep does
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name === ".git" || entry.isSymbolicLink()) continue;
      const isDirectory = entry.isDirectory();
      if (!isDirectory && !entry.isFile()) continue;
      const childFromRoot = fromRoot === "" ? entry.name : `${fromRoot}/${entry.name}`;
      if (isIgnored(active, childFromRoot, isDirectory)) continue;
      const absolute = path.join(dirAbsolute, entry.name);
      yield { absolute, relative: toPosix(path.relative(start, absolute)), isDirectory };
      if (isDirectory) yield* visit(absolute, childFromRoot, active);
    }
  }
  yield* visit(start, startFromRoot, inherited);
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
