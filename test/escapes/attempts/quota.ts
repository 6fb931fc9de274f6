/**
 * The workspace quota (docs/tools.md, "Workspace quota"): a workspace filled past it by bash and by
 * the write tool. Outcome: the workspace on the worker's disk holds more than the quota plus the
 * documented slack (what a call writes between two measurements), the write tool's refused file
 * exists, or the run does not go on (a later call of the same run, deleting and writing again,
 * has no result).
 */
import { workspaceUsage } from "../../../src/tools/workspace-quota";
import { type Attempt, judge, playedLine } from "../attempt";
import { ATTACKER_TENANT, type EscapeContext } from "../context";

/** The suite's operator sets a small quota (KEEL_WORKSPACE_MAX_MB), so filling it takes seconds. */
export const ESCAPES_WORKSPACE_MB = 64;
const MIB = 1024 ** 2;
/** The documented slack: what a tight loop writes in the 250 ms between two measurements (30 MB here). */
const SLACK_BYTES = 256 * MIB;

const quotaBytes = () => Number(process.env.KEEL_WORKSPACE_MAX_MB ?? ESCAPES_WORKSPACE_MB) * MIB;
const mb = (bytes: number) => `${Math.round((bytes / MIB) * 10) / 10} MB`;

/** Findings about the attacker's workspace after the run: over quota + slack. */
async function overQuota(ctx: EscapeContext, sessionId: string): Promise<string[]> {
  const held = await workspaceUsage(ctx.workspaceOf(ATTACKER_TENANT, sessionId));
  return held > quotaBytes() + SLACK_BYTES
    ? [
        `the workspace holds ${mb(held)} on the worker's disk (quota ${mb(quotaBytes())}, slack ${mb(SLACK_BYTES)})`,
      ]
    : [];
}

/** The run went on after the refusal: its last call (writing and reading back) answered `after`. */
function wentOn(results: ReadonlyArray<{ text: string }>): string[] {
  return results.at(-1)?.text.trim() === "after" ? [] : ["the run did not go on after the refusal"];
}

/** The workspace's size as `du -sb .` printed it first in a result, when it did. */
const printedUsage = (text: string | undefined): number | undefined => {
  const found = /^(\d+)\t\.$/m.exec(text ?? "");
  return found ? Number(found[1]) : undefined;
};

const quotaBash: Attempt = {
  id: "quota-bash",
  class: "Sandbox",
  description:
    "bash writes 8 MB files in a tight loop to the quota plus twice the slack, then one file past the quota; deletes after each, then writes again",
  short: true,
  async run(ctx) {
    const sessionId = ctx.newSession("quota-bash");
    const quotaMb = quotaBytes() / MIB;
    const call = (command: string) => [{ name: "bash", arguments: { command, timeout: 60 } }];
    const played = await ctx.play(
      sessionId,
      [
        // Past the quota plus twice the slack: a loop the watch never ended shows in the bytes held,
        // however fast the disk (a fast one wrote three times the quota before the first measurement).
        call(
          `for i in $(seq ${Math.ceil((quotaMb + (2 * SLACK_BYTES) / MIB) / 8)}); do head -c 8M /dev/zero > f$i; done; echo finished`,
        ),
        // The file-size limit is set when a call starts: room freed by a call is for the next one.
        call("du -sb .; rm -f f*"),
        call(`head -c ${quotaMb + 16}M /dev/zero > one; ls -la one`),
        call("du -sb .; rm -f one"),
        call("echo after > a.txt && cat a.txt"),
      ],
      {},
      120_000,
    );
    const findings = [...(await overQuota(ctx, sessionId)), ...wentOn(played.results)];
    const [loop, afterLoop, one, afterOne] = played.results;
    for (const [name, result] of [
      ["the loop", loop],
      ["the file past the quota", one],
    ] as const) {
      if (!result?.text.includes("[sandbox limit: the workspace is limited to"))
        findings.push(`${name}'s result does not name the quota`);
    }
    if (loop?.text.includes("finished")) findings.push("the loop was not ended");
    const loopHeld = printedUsage(afterLoop?.text);
    const oneHeld = printedUsage(afterOne?.text);
    if (loopHeld === undefined || loopHeld > quotaBytes() + SLACK_BYTES)
      findings.push(`after the loop the workspace held ${loopHeld === undefined ? "?" : mb(loopHeld)}`);
    if (oneHeld === undefined || oneHeld > quotaBytes())
      findings.push(`after the one file the workspace held ${oneHeld === undefined ? "?" : mb(oneHeld)}`);
    return judge(
      findings,
      `the loop ended at ${loopHeld === undefined ? "?" : mb(loopHeld)}, the one file at ${oneHeld === undefined ? "?" : mb(oneHeld)} (quota ${mb(quotaBytes())}); ${oneLineOf(one?.text)}`,
    );
  },
};

const oneLineOf = (text: string | undefined) => (text ?? "").split("\n").at(-1) ?? "";

const quotaWrite: Attempt = {
  id: "quota-write",
  class: "Sandbox",
  description: "bash fills the workspace to 100 KB under the quota, then the write tool writes 200 KB",
  short: true,
  async run(ctx) {
    const sessionId = ctx.newSession("quota-write");
    const fill = `head -c $((${quotaBytes()} - 100 * 1024 - $(du -sb . | cut -f1))) /dev/zero > fill; du -sb .`;
    const played = await ctx.play(
      sessionId,
      [
        [{ name: "bash", arguments: { command: fill, timeout: 60 } }],
        [{ name: "write", arguments: { path: "over.txt", content: "x".repeat(200 * 1024) } }],
        [
          {
            name: "bash",
            arguments: { command: "ls over.txt 2>/dev/null; rm fill; echo after > a.txt && cat a.txt" },
          },
        ],
      ],
      {},
      120_000,
    );
    const findings = [...(await overQuota(ctx, sessionId)), ...wentOn(played.results)];
    const write = played.results.find((result) => result.tool === "write");
    if (!write?.isError || !/the workspace is limited to/.test(write.text))
      findings.push(`the write tool was not refused: ${write?.text ?? "no result"}`);
    if (played.results.at(-1)?.text.includes("over.txt")) findings.push("the refused file over.txt exists");
    return judge(findings, write ? `write: ${write.text.split("\n")[0]}` : playedLine(played));
  },
};

export const quotaAttempts: Attempt[] = [quotaBash, quotaWrite];
