/**
 * Output spill: a bash output over 2,000 lines is written by the worker (outside the sandbox) to
 * `.keel/scratch/` in the workspace, and `.keel/.gitignore` is created beside it. The attacker
 * first points `.keel`, `.keel/scratch` or `.keel/.gitignore` somewhere else. Outcome: the host
 * folder or another tenant's folder changed (the generic checks), or a canary was read back.
 */
import { type Attempt, judge, oneLine, playedLine } from "../attempt";
import { type EscapeContext, VICTIM_TENANT } from "../context";

const SPILL = { name: "bash", arguments: { command: "seq 1 3000" } };

const spills: Array<{
  id: string;
  description: string;
  short: boolean;
  link: (ctx: EscapeContext) => string;
}> = [
  {
    id: "spill-gitignore-host-file",
    description: "`.keel/.gitignore` -> the host file",
    short: true,
    link: (ctx) => `mkdir -p .keel/scratch && ln -sfn ${ctx.canaries.hostFile} .keel/.gitignore`,
  },
  {
    id: "spill-keel-other-tenant",
    description: "`.keel` -> another tenant's workspace (worker path)",
    short: true,
    link: (ctx) => `rm -rf .keel && ln -sfn ${ctx.victimWorkspace} .keel`,
  },
  {
    id: "spill-keel-other-tenant-relative",
    description: "`.keel` -> ../../<other tenant>/<session> (relative)",
    short: false,
    link: (ctx) => `rm -rf .keel && ln -sfn ../../${VICTIM_TENANT}/${ctx.victimSession} .keel`,
  },
  {
    id: "spill-scratch-host-folder",
    description: "`.keel/scratch` -> a host folder (`/tmp/x`)",
    short: true,
    link: (ctx) => `rm -rf .keel && mkdir .keel && ln -sfn ${ctx.canaries.hostDir}/x .keel/scratch`,
  },
  {
    id: "spill-keel-host-folder",
    description: "`.keel` -> the host folder",
    short: false,
    link: (ctx) => `rm -rf .keel && ln -sfn ${ctx.canaries.hostDir} .keel`,
  },
];

export const spillAttempts: Attempt[] = spills.map(
  (spill): Attempt => ({
    id: spill.id,
    class: "Spill",
    description: `${spill.description}, then 3,000 lines of output`,
    short: spill.short,
    async run(ctx) {
      const sessionId = ctx.newSession(spill.id);
      const played = await ctx.play(sessionId, [
        [{ name: "bash", arguments: { command: spill.link(ctx) } }],
        [SPILL],
        [{ name: "read", arguments: { path: ".keel/.gitignore" } }],
      ]);
      // What stopped it is the spilling call's result (the second), or why the run ended.
      const spilled = played.results[1];
      const line = spilled ? oneLine(`bash: ${spilled.text.split("\n").at(-1)}`) : playedLine(played);
      return judge(await ctx.leaks(sessionId), line);
    },
  }),
);
