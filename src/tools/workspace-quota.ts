/**
 * The workspace quota (KEEL_WORKSPACE_MAX_MB): the bytes of files one workspace may hold, enforced
 * by the tools that write there, since the worker cannot set file-system quotas without root
 * (docs/tools.md, "Sandbox", "Workspace quota"):
 *
 * - `write` and `edit` measure the workspace before they write and refuse exactly the write that
 *   would take it past the quota (`assertWithinQuota`);
 * - `bash` measures it before the call and lowers the call's RLIMIT_FSIZE to what is left (0 when
 *   nothing is: files can still be deleted), so no single file crosses it; while the command runs
 *   the usage is measured again every second or so (`watch`) and the call's processes are ended
 *   when the total is over the quota; its result ends with a notice saying so (`quotaNotice`).
 *
 * Usage is the apparent size of everything below the workspace (`du -sbx`: regular files by their
 * length, folders and links by theirs, a hard-linked file once, links never followed), the same
 * bytes a snapshot records. Measured by `du` in its own process: 50,000 files take about 70 ms
 * there against 170 ms of blocking synchronous calls or a second of asynchronous ones in node.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { DEFAULT_PROCESS_LIMITS, findExecutable, type ProcessLimits } from "./sandbox";
import { ToolError } from "./tool-error";

/**
 * Shortest interval between two measurements while a command runs: what a command writes in one
 * interval is how far it can overshoot (a tight loop wrote 485 MB in a second here, 120 MB in a
 * quarter), and a small workspace costs `du` a few milliseconds, so four times a second.
 */
const QUOTA_POLL_MS = 250;
/** A measurement may take at most this share of the time between two (a huge tree is measured less often). */
const POLL_SHARE = 0.1;

const MIB = 1024 ** 2;
const mib = (bytes: number): string => `${Math.round((bytes / MIB) * 10) / 10} MB`;

/** The quota of a workspace under `limits`. */
const quotaOf = (limits: ProcessLimits): number =>
  limits.workspaceBytes ?? DEFAULT_PROCESS_LIMITS.workspaceBytes ?? Number.POSITIVE_INFINITY;

/**
 * Bytes held below `dir` (a real path on the worker). A file that disappears while it is measured
 * is not counted; an unreadable folder is counted by its own size.
 */
export async function workspaceUsage(dir: string): Promise<number> {
  const du = findExecutable("du");
  if (du) {
    const measured = await new Promise<number | undefined>((resolve) => {
      // Exit code 1 when a file vanished mid-walk: the total printed is still the one wanted.
      execFile(du, ["-s", "-b", "-x", "--", dir], { maxBuffer: 64 * 1024 }, (_error, stdout) => {
        const total = Number.parseInt(String(stdout).split(/\s/, 1)[0] ?? "", 10);
        resolve(Number.isSafeInteger(total) ? total : undefined);
      });
    });
    if (measured !== undefined) return measured;
  }
  return walkUsage(dir);
}

/** The same measure without `du`: slower (asynchronous calls per file), never blocking. */
async function walkUsage(dir: string): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  const visit = async (current: string): Promise<void> => {
    const stats = await fs.lstat(current).catch(() => undefined);
    if (!stats) return;
    if (stats.nlink > 1 && !stats.isDirectory()) {
      const key = `${stats.dev}:${stats.ino}`;
      if (seen.has(key)) return;
      seen.add(key);
    }
    total += stats.size;
    if (!stats.isDirectory()) return;
    const names = await fs.readdir(current).catch(() => [] as string[]);
    for (const name of names) await visit(path.join(current, name));
  };
  await visit(dir);
  return total;
}

/** The notice a call's result ends with once the workspace reached its quota. */
export function quotaNotice(limitBytes: number, heldBytes: number): string {
  return `[sandbox limit: the workspace is limited to ${mib(limitBytes)}; it holds ${mib(heldBytes)}. Delete files to write more.]`;
}

/**
 * Refuses (ToolError) a write of the file tools that would take the workspace at `dir` past its
 * quota: `growth` more bytes than the file held before. A write that does not grow the
 * workspace is never refused, even over the quota.
 */
export async function assertWithinQuota(
  dir: string,
  limits: ProcessLimits,
  growth: number,
  userPath: string,
): Promise<void> {
  if (growth <= 0) return;
  const limit = quotaOf(limits);
  const held = await workspaceUsage(await fs.realpath(dir));
  if (held + growth <= limit) return;
  throw new ToolError(
    `Cannot write ${userPath}: the workspace is limited to ${mib(limit)} and holds ${mib(held)}; this write would add ${mib(growth)}. Delete files to write more. Nothing was written.`,
  );
}

/** The quota of one bash call: its lowered file-size limit, the watch while it runs, the notice after. */
export interface CallQuota {
  /** The call's limits: RLIMIT_FSIZE at most what is left of the quota (0 when nothing is). */
  limits: ProcessLimits;
  /** True when the quota, not the file-size setting, bounds the call's file size. */
  boundsFileSize: boolean;
  /** Measures every QUOTA_POLL_MS or more; calls `onOver` once when the workspace is over the quota. Returns a stop. */
  watch(onOver: () => void): () => void;
  /** True once `watch` found the workspace over the quota (and ended the call). */
  readonly ended: boolean;
  /** After the call: the notice when the workspace reached its quota, else undefined. */
  finish(output: string, exitCode: number | null): Promise<string | undefined>;
}

/** Measures the workspace before a bash call and prepares its quota. */
export async function prepareCallQuota(dir: string, limits: ProcessLimits): Promise<CallQuota> {
  const limit = quotaOf(limits);
  const started = Date.now();
  let held = await workspaceUsage(dir);
  let lastCost = Date.now() - started;
  const left = Math.max(0, limit - held);
  const boundsFileSize = left < limits.fileSizeBytes;
  let ended = false;
  return {
    limits: boundsFileSize ? { ...limits, fileSizeBytes: left } : limits,
    boundsFileSize,
    get ended() {
      return ended;
    },
    watch(onOver) {
      let stopped = false;
      let timer: NodeJS.Timeout | undefined;
      const schedule = () => {
        if (stopped) return;
        timer = setTimeout(measure, Math.max(QUOTA_POLL_MS, lastCost / POLL_SHARE));
        timer.unref();
      };
      const measure = async () => {
        const at = Date.now();
        held = await workspaceUsage(dir);
        lastCost = Date.now() - at;
        if (stopped) return;
        if (held > limit) {
          ended = true;
          onOver();
          return;
        }
        schedule();
      };
      schedule();
      return () => {
        stopped = true;
        clearTimeout(timer);
      };
    },
    async finish(output, exitCode) {
      held = await workspaceUsage(dir);
      const fileSizeHit = exitCode === 128 + 25 || /File size limit exceeded|File too large/.test(output);
      if (ended || held >= limit || (boundsFileSize && fileSizeHit)) return quotaNotice(limit, held);
      return undefined;
    },
  };
}
