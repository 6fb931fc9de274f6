/**
 * The canaries an escape is judged by. Every token is random and never written in an attacker's
 * command, so finding one anywhere the attacker can read (a tool result, a stored entry, an S3
 * object, an export, a request to the attacker's server) proves it was read.
 *
 * - secrets: values only the worker's (and the API server's) environment holds;
 * - the host folder: outside the workspace root, a file `canary.txt` (commands name it) holding
 *   the content token, and a file named with the name token (commands never name it, so it
 *   shows up only in a listing of the folder); any change to the folder is an escape;
 * - the victim: another tenant's workspace with a file holding its token; any change to that
 *   tenant's folder is an escape.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

const token = (kind: string) => `${kind}-${randomBytes(10).toString("hex")}`;

export interface Canaries {
  /** Secret values by the variable that holds them. */
  secrets: Record<string, string>;
  /** The folder outside every workspace, and the file in it commands name. */
  hostDir: string;
  hostFile: string;
  hostContent: string;
  hostName: string;
  /** A string only the victim tenant's workspace holds. */
  victimContent: string;
  /** Every token to look for, by what it proves. */
  tokens(): Array<{ token: string; means: string }>;
  /** What changed in the host folder since it was laid out (undefined: nothing); lays it out again. */
  hostChanges(): string | undefined;
}

/** A folder's state: relative path → kind, mode and content (or link target). */
export function folderState(dir: string): Map<string, string> {
  const state = new Map<string, string>();
  const walk = (relative: string) => {
    const absolute = join(dir, relative);
    let entries: string[];
    try {
      entries = readdirSync(absolute);
    } catch {
      return;
    }
    for (const name of entries) {
      const path = relative ? `${relative}/${name}` : name;
      const full = join(dir, path);
      const stat = lstatSync(full);
      const mode = (stat.mode & 0o7777).toString(8);
      if (stat.isSymbolicLink()) state.set(path, `link -> ${readlinkSync(full)}`);
      else if (stat.isDirectory()) {
        state.set(path, `dir ${mode}`);
        walk(path);
      } else if (stat.isFile())
        state.set(
          path,
          `file ${mode} ${stat.size} ${stat.size <= 65_536 ? readFileSync(full, "latin1") : ""}`,
        );
      else state.set(path, `special ${stat.mode.toString(8)}`);
    }
  };
  walk("");
  return state;
}

/** The paths whose state differs between `before` and `after`, described in one line. */
export function describeChanges(before: Map<string, string>, after: Map<string, string>): string | undefined {
  const changed: string[] = [];
  for (const [path, state] of after) {
    const shown = JSON.stringify(state.slice(0, 40));
    if (!before.has(path)) changed.push(`+${path} ${shown}`);
    else if (before.get(path) !== state) changed.push(`~${path} ${shown}`);
  }
  for (const path of before.keys()) if (!after.has(path)) changed.push(`-${path}`);
  return changed.length > 0 ? changed.slice(0, 4).join(", ") : undefined;
}

export function layOutCanaries(dir: string, secrets: Record<string, string>): Canaries {
  const hostDir = join(dir, "host");
  const hostFile = join(hostDir, "canary.txt");
  const hostContent = token("HOSTCANARY");
  const hostName = token("HOSTNAME");
  const victimContent = token("VICTIMCANARY");
  const layOut = () => {
    rmSync(hostDir, { recursive: true, force: true });
    mkdirSync(join(hostDir, "x"), { recursive: true });
    writeFileSync(hostFile, `${hostContent}\n`, { mode: 0o644 });
    writeFileSync(join(hostDir, hostName), `${hostContent}\n`, { mode: 0o644 });
    // A repository a workspace source could clone: its one file holds the content token.
    const repo = join(hostDir, "repo");
    mkdirSync(repo);
    writeFileSync(join(repo, "secret.txt"), `${hostContent}\n`);
    const git = (...args: string[]) =>
      execFileSync("git", ["-C", repo, "-c", "user.name=host", "-c", "user.email=host@localhost", ...args], {
        stdio: "ignore",
      });
    git("init", "-q", "-b", "main");
    git("add", "secret.txt");
    git("commit", "-q", "-m", "host");
  };
  layOut();
  let laidOut = folderState(hostDir);
  return {
    secrets,
    hostDir,
    hostFile,
    hostContent,
    hostName,
    victimContent,
    tokens: () => [
      ...Object.entries(secrets).map(([name, value]) => ({ token: value, means: `secret ${name}` })),
      { token: hostContent, means: "host file content" },
      { token: hostName, means: "host folder listing" },
      { token: victimContent, means: "other tenant's file" },
    ],
    hostChanges() {
      const changes = describeChanges(laidOut, folderState(hostDir));
      if (changes) {
        layOut();
        laidOut = folderState(hostDir);
      }
      return changes;
    },
  };
}

/** The tokens of `canaries` that `data` contains, as "what it proves (where)". */
export function findTokens(canaries: Canaries, data: string | Buffer, where: string): string[] {
  return canaries
    .tokens()
    .filter(({ token }) => data.includes(token))
    .map(({ means }) => `${means} in ${where}`);
}
