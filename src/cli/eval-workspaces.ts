/**
 * A suite file's cases in the API's form: each local source of files (a directory, an archive, a
 * commit of a local git repository) uploaded once as a session archive (`POST
 * /v1/sessions/import`: a session holding one marker entry, whose workspace is those files), and
 * the case then starts from that entry; a stored session's entry is used as it is; a git URL
 * becomes the runs' `workspace` setting (the workers clone it). Nothing here needs the network
 * but the API.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { create as createTar, extract as extractTar } from "tar";
import type { ApiClient } from "../api-client/client";
import { UsageError } from "../api-client/client";
import { makeEntryId } from "../core/ids";
import { CURRENT_SESSION_VERSION } from "../core/session-version";
import type { CaseWorkspace, SuiteFile } from "../evals/suite-file";

/** The custom type of a seed session's one entry (never part of a model's context). */
const SEED_ENTRY_TYPE = "keel-eval-workspace";

/** The API's suite: every case with `from` or a `workspace` setting instead of a local source. */
export async function uploadedSuite(
  client: ApiClient,
  suite: SuiteFile,
  suiteDir: string,
  progress: (line: string) => void,
): Promise<Record<string, unknown>> {
  const seeds = new Map<string, Promise<{ sessionId: string; entryId: string }>>();
  const cases = [];
  for (const evalCase of suite.cases) {
    const { workspace, ...rest } = evalCase;
    if (!workspace || workspace.type === "empty") {
      cases.push(rest);
      continue;
    }
    if (workspace.type === "session") {
      cases.push({ ...rest, from: { sessionId: workspace.sessionId, entryId: workspace.entryId } });
      continue;
    }
    if (workspace.type === "git" && workspace.url !== undefined) {
      const source = { type: "git", url: workspace.url, ...(workspace.ref ? { ref: workspace.ref } : {}) };
      cases.push({ ...rest, settings: { ...rest.settings, workspace: source } });
      continue;
    }
    const key = JSON.stringify(workspace);
    let seed = seeds.get(key);
    if (!seed) {
      seed = uploadSeed(client, workspace, suiteDir);
      seeds.set(key, seed);
      progress(`uploading the files of case ${evalCase.id} (${describeSource(workspace)})\n`);
    }
    cases.push({ ...rest, from: await seed });
  }
  return {
    ...(suite.name ? { name: suite.name } : {}),
    ...(suite.settings ? { settings: suite.settings } : {}),
    cases,
  };
}

function describeSource(workspace: CaseWorkspace): string {
  switch (workspace.type) {
    case "git":
      return `${workspace.path} at ${workspace.commit}`;
    case "directory":
    case "archive":
      return workspace.path;
    default:
      return workspace.type;
  }
}

/** Uploads the files as a new session (a session archive); its one entry is where cases start. */
async function uploadSeed(
  client: ApiClient,
  workspace: CaseWorkspace,
  suiteDir: string,
): Promise<{ sessionId: string; entryId: string }> {
  const folder = mkdtempSync(path.join(tmpdir(), "keel-eval-"));
  try {
    const files = path.join(folder, "workspace");
    mkdirSync(files);
    await collectFiles(
      workspace,
      path.resolve(suiteDir, "path" in workspace && workspace.path ? workspace.path : "."),
      files,
    );
    const entryId = makeEntryId(Math.random);
    const timestamp = new Date().toISOString();
    const header = {
      type: "session",
      version: CURRENT_SESSION_VERSION,
      id: randomUUID(),
      timestamp,
      cwd: "",
    };
    const entry = { type: "custom", id: entryId, parentId: null, timestamp, customType: SEED_ENTRY_TYPE };
    writeFileSync(
      path.join(folder, "session.jsonl"),
      `${JSON.stringify(header)}\n${JSON.stringify(entry)}\n`,
    );
    const chunks: Buffer[] = [];
    for await (const chunk of createTar({ gzip: true, cwd: folder, portable: true }, [
      "session.jsonl",
      "workspace",
    ]))
      chunks.push(Buffer.from(chunk as Uint8Array));
    const answer = await client.json(
      client.api.v1.sessions.import.$post(
        {},
        {
          headers: { "content-type": "application/gzip" },
          init: { body: new Uint8Array(Buffer.concat(chunks)) },
        },
      ),
    );
    return { sessionId: answer.sessionId, entryId: answer.leafId ?? entryId };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** Puts the source's files into `target` (an empty folder). */
async function collectFiles(workspace: CaseWorkspace, source: string, target: string): Promise<void> {
  switch (workspace.type) {
    case "directory":
      // Links are copied as links; the API refuses those that leave the workspace.
      cpSync(source, target, { recursive: true, verbatimSymlinks: true });
      return;
    case "archive":
      await extractTar({ file: source, cwd: target, strict: true });
      return;
    case "git": {
      // The commit's files without the repository's history (later commits would give the answer
      // away), in a fresh repository of one commit, so `git diff` shows what a run changed.
      let archive: Buffer;
      try {
        archive = execFileSync("git", ["-C", source, "archive", "--format=tar", workspace.commit ?? "HEAD"], {
          maxBuffer: 1024 ** 3,
          stdio: ["ignore", "pipe", "pipe"],
        });
      } catch (error) {
        throw new UsageError(
          `cannot read commit ${workspace.commit} of ${source}: ${(error as Error).message}`,
        );
      }
      const tarFile = path.join(path.dirname(target), "source.tar");
      writeFileSync(tarFile, archive);
      await extractTar({ file: tarFile, cwd: target, strict: true });
      rmSync(tarFile);
      const git = (...args: string[]) =>
        execFileSync("git", ["-c", "user.name=keel", "-c", "user.email=keel@localhost", ...args], {
          cwd: target,
          stdio: "ignore",
        });
      git("init", "-q");
      git("add", "-A");
      git("commit", "-q", "--allow-empty", "-m", `${path.basename(source)} at ${workspace.commit}`);
      return;
    }
    default:
      return;
  }
}

/** The suite file at `file`, parsed (a usage error says where it is wrong). */
export function readSuiteFile(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new UsageError(`cannot read the suite ${file}: ${(error as Error).message}`);
  }
}
