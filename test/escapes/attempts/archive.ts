/**
 * Archive imports: `POST /v1/sessions/import` with a crafted `.tar.gz` (docs/store.md, "Export
 * with the workspace"), then a run in the imported session, which restores the workspace on the
 * worker and spills a long output into `.keel/`. Outcome: the host folder or another tenant's
 * folder changed (generic checks), a canary in the session's data, a setuid file or device node
 * on the worker's disk, the API or worker not answering after a bomb.
 */
import { createGzip, gzipSync } from "node:zlib";
import { ApiGaveUpError } from "../../chaos/api-client";
import { fixtureEntry, headerOnly } from "../../support/tar-fixture";
import { type Attempt, answerLine, judge, playedLine } from "../attempt";
import { ATTACKER_TENANT, type EscapeContext, VICTIM_TENANT } from "../context";
import { dangerousFiles } from "./sandbox";

const BLOCK = 512;
const pad = (size: number) => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

/** Tar type flags as a hostile archive writes them, and the `tar` package's names for them. */
const TYPE_NAMES = {
  "0": "File",
  "1": "Link",
  "2": "SymbolicLink",
  "3": "CharacterDevice",
  "4": "BlockDevice",
  "5": "Directory",
  "6": "FIFO",
  x: "ExtendedHeader",
} as const;

/** One raw tar entry: any type flag, any mode, any name (what a hostile archive may hold). */
interface RawEntry {
  name: string;
  type: keyof typeof TYPE_NAMES;
  mode?: number;
  body?: Buffer;
  link?: string;
}

function rawEntry(entry: RawEntry): Buffer {
  const device = entry.type === "3" || entry.type === "4";
  return fixtureEntry({
    path: entry.name,
    type: TYPE_NAMES[entry.type],
    mode: entry.mode ?? 0o644,
    ...(entry.body ? { body: entry.body } : {}),
    ...(entry.link !== undefined ? { linkpath: entry.link } : {}),
    // Device major 1, minor 3 (/dev/null).
    ...(device ? { devmaj: 1, devmin: 3 } : {}),
  });
}

/** The scenario an imported session plays: its first user message names it (the LLM server reads it there). */
const IMPORTED_SCENARIO = "esc-imported";

function sessionFile(): RawEntry {
  const at = "2026-01-01T00:00:00.000Z";
  const lines = [
    { type: "session", version: 3, id: "imported", timestamp: at, cwd: "" },
    {
      type: "message",
      id: "e0000001",
      parentId: null,
      timestamp: at,
      message: { role: "user", content: `[scenario:${IMPORTED_SCENARIO}] hello`, timestamp: 1 },
    },
  ];
  return {
    name: "session.jsonl",
    type: "0",
    body: Buffer.from(`${lines.map((line) => JSON.stringify(line)).join("\n")}\n`),
  };
}

const file = (name: string, text = "x\n", mode = 0o644): RawEntry => ({
  name,
  type: "0",
  mode,
  body: Buffer.from(text),
});
const dir = (name: string, mode = 0o755): RawEntry => ({ name: `${name}/`, type: "5", mode });
const link = (name: string, target: string): RawEntry => ({ name, type: "2", mode: 0o777, link: target });

function archiveOf(entries: readonly RawEntry[]): Buffer {
  return gzipSync(
    Buffer.concat([...[sessionFile(), dir("workspace"), ...entries].map(rawEntry), Buffer.alloc(BLOCK * 2)]),
  );
}

/** A gzip of an archive whose one file is `bytes` zeros, compressed as it is produced. */
async function zeroBomb(bytes: number): Promise<Buffer> {
  const gzip = createGzip({ level: 9 });
  const chunks: Buffer[] = [];
  gzip.on("data", (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise((resolve) => gzip.on("end", resolve));
  gzip.write(rawEntry(sessionFile()));
  gzip.write(rawEntry(dir("workspace")));
  gzip.write(headerOnly("workspace/zeros", bytes));
  const chunk = Buffer.alloc(16 * 1024 ** 2);
  for (let written = 0; written < bytes; written += chunk.length) {
    const part = Math.min(chunk.length, bytes - written);
    if (!gzip.write(part === chunk.length ? chunk : chunk.subarray(0, part)))
      await new Promise((resolve) => gzip.once("drain", resolve));
  }
  gzip.end(Buffer.concat([pad(bytes), Buffer.alloc(BLOCK * 2)]));
  await done;
  return Buffer.concat(chunks);
}

interface Crafted {
  id: string;
  description: string;
  short: boolean;
  archive: (ctx: EscapeContext) => Promise<Buffer> | Buffer;
  /** Check that the API and the worker still answer afterwards (bombs). */
  bomb?: boolean;
  /** The API must answer within this many milliseconds (a refusal that costs minutes of work escapes). */
  answerWithinMs?: number;
}

const crafted: Crafted[] = [
  {
    id: "archive-dotdot",
    description: "`workspace/../../escaped` (file)",
    short: true,
    archive: () => archiveOf([file("workspace/../../escaped")]),
  },
  {
    id: "archive-dotdot-victim",
    description: "`workspace/../../../victim/<session>/planted` (file)",
    short: false,
    archive: (ctx) => archiveOf([file(`workspace/../../../${VICTIM_TENANT}/${ctx.victimSession}/planted`)]),
  },
  {
    id: "archive-absolute",
    description: "an absolute path into the host folder",
    short: true,
    archive: (ctx) => archiveOf([file(`${ctx.canaries.hostDir}/x/absolute`)]),
  },
  {
    id: "archive-link-chain-victim",
    description: "`d/l1 -> ..`, then `.keel -> d/l1/../../<victim>/<session>` (lexically inside)",
    short: true,
    archive: (ctx) =>
      archiveOf([
        dir("workspace/d"),
        link("workspace/d/l1", ".."),
        link("workspace/.keel", `d/l1/../../${VICTIM_TENANT}/${ctx.victimSession}`),
      ]),
  },
  {
    id: "archive-link-chain-host",
    description: "`a/b/c/l -> ../../..`, then `.keel -> a/b/c/l/../../../host/x` (the host folder)",
    short: false,
    archive: () =>
      archiveOf([
        dir("workspace/a/b/c"),
        link("workspace/a/b/c/l", "../../.."),
        link("workspace/.keel", "a/b/c/l/../../../host/x"),
      ]),
  },
  {
    id: "archive-link-absolute",
    description: "`.keel -> <host folder>` (absolute target)",
    short: false,
    archive: (ctx) => archiveOf([link("workspace/.keel", ctx.canaries.hostDir)]),
  },
  {
    id: "archive-hardlink-host",
    description: "a hard link to the host file",
    short: true,
    archive: (ctx) => archiveOf([{ name: "workspace/h", type: "1", link: ctx.canaries.hostFile }]),
  },
  {
    id: "archive-hardlink-relative",
    description: "a hard link `workspace/h -> workspace/../../../../host/canary.txt`",
    short: false,
    archive: () =>
      archiveOf([{ name: "workspace/h", type: "1", link: "workspace/../../../../host/canary.txt" }]),
  },
  {
    id: "archive-char-device",
    description: "a character device (1, 3)",
    short: true,
    archive: () => archiveOf([{ name: "workspace/null", type: "3" }]),
  },
  {
    id: "archive-fifo",
    description: "a FIFO",
    short: false,
    archive: () => archiveOf([{ name: "workspace/fifo", type: "6" }]),
  },
  {
    id: "archive-setuid",
    description: "a file with mode 4755 and a folder with 2777",
    short: true,
    archive: () =>
      archiveOf([file("workspace/suid", "#!/bin/sh\nid\n", 0o4755), dir("workspace/sgid", 0o2777)]),
  },
  {
    id: "archive-pax-path",
    description: "a pax `path=../../escaped` over a harmless ustar name",
    short: false,
    archive: () => {
      const rest = " path=workspace/../../escaped\n";
      const record = `${rest.length + 2}${rest}`;
      return gzipSync(
        Buffer.concat([
          rawEntry(sessionFile()),
          rawEntry({ name: "PaxHeader", type: "x", body: Buffer.from(record) }),
          rawEntry(file("workspace/harmless")),
          Buffer.alloc(BLOCK * 2),
        ]),
      );
    },
  },
  {
    id: "archive-duplicate",
    description: "a file, then a link of the same name to the host file",
    short: false,
    archive: (ctx) => archiveOf([file("workspace/f"), link("workspace/f", ctx.canaries.hostFile)]),
  },
  {
    id: "archive-decompression-bomb",
    description: "a .tar.gz of 1.5 GB of zeros (about 1.5 MB packed)",
    short: true,
    bomb: true,
    archive: () => zeroBomb(1.5 * 1024 ** 3),
  },
  {
    id: "archive-entry-count",
    description: "an archive of many empty files (2,000 short, 20,000 long)",
    short: true,
    bomb: true,
    archive: (ctx) =>
      archiveOf(
        Array.from({ length: ctx.form === "short" ? 2_000 : 20_000 }, (_, i) => file(`workspace/f/${i}`, "")),
      ),
  },
  {
    id: "archive-entry-count-150k",
    description:
      "an archive of 150,000 empty files (over the 100,000-entry limit): refused within 15 s, before the files are written",
    short: true,
    bomb: true,
    answerWithinMs: 15_000,
    archive: () => archiveOf(Array.from({ length: 150_000 }, (_, i) => file(`workspace/f/${i}`, ""))),
  },
];

function archiveAttempt(attack: Crafted): Attempt {
  return {
    id: attack.id,
    class: "Archive",
    description: `import ${attack.description}`,
    short: attack.short,
    async run(ctx) {
      const body = await attack.archive(ctx);
      const started = Date.now();
      const findings: string[] = [];
      const answer = await ctx.api
        .postBytes("/v1/sessions/import", body, "application/gzip", `import-${attack.id}-${started}`)
        .catch((error: unknown) => {
          // A bomb the API is still working on: the outcome is whether the service still answers.
          if (!(error instanceof ApiGaveUpError) || !attack.bomb) throw error;
          return undefined;
        });
      const answeredMs = Date.now() - started;
      if (attack.answerWithinMs !== undefined && (!answer || answeredMs > attack.answerWithinMs))
        findings.push(
          `the import ${answer ? `answered after ${answeredMs} ms` : "did not answer"} (bound ${attack.answerWithinMs} ms)`,
        );
      let stoppedBy = answer
        ? `API ${answerLine(answer)} after ${(answeredMs / 1000).toFixed(1)} s`
        : "the import did not answer within 30 s";
      const sessionId = typeof answer?.body?.sessionId === "string" ? answer.body.sessionId : undefined;
      if (answer && answer.status < 300 && sessionId) {
        // A run restores the workspace on the worker and spills a long output into `.keel/`.
        const played = await ctx.play(
          sessionId,
          [[{ name: "bash", arguments: { command: "ls -laR | head -50; seq 1 3000" } }]],
          {},
          120_000,
          ctx.api,
          IMPORTED_SCENARIO,
        );
        stoppedBy = `import ${answer.status}; ${playedLine(played)}`;
        findings.push(
          ...(await ctx.leaks(sessionId)),
          ...dangerousFiles(ctx.workspaceOf(ATTACKER_TENANT, sessionId)),
        );
      }
      if (attack.bomb) {
        const health = await ctx.api.get("/v1/sessions?limit=1");
        if (health.status !== 200) findings.push(`the API answered ${health.status} after the import`);
        const stuck = await ctx.unresponsive();
        if (stuck) findings.push(stuck);
        if (!answer) stoppedBy += "; the API and the worker still answered";
      }
      return judge(findings, stoppedBy);
    },
  };
}

export const archiveAttempts: Attempt[] = crafted.map(archiveAttempt);
