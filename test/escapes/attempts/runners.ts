/**
 * Runner tokens: what the attacker can do with a runner token of its own environment. The victim
 * has a run waiting in its environment `build` for a runner (a bash call that writes the victim
 * canary's name into its output); the attacker names its own environment `build` too, so every
 * route a runner uses is tried with the victim's environment name and the victim's call id (ids
 * are `<session>.<slot>`, so the attacker can spell them). The outcome: the victim's call is never
 * handed to the attacker, never completed by it, and the token opens nothing but runner routes.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { type ApiAnswer, ChaosApiClient } from "../../chaos/api-client";
import { type Attempt, answerLine, judge, type Verdict } from "../attempt";
import { type EscapeContext, VICTIM_TENANT } from "../context";

/** The environment name both tenants use. */
const SHARED_NAME = "build";
/** How long the victim's call waits for a runner: longer than every attempt here. */
const VICTIM_WAIT_SECONDS = 600;
const CLIENT_BOUND_MS = 15_000;
/** The attempt after which the scene is cleared (with `--only` and without it, closing the stack does). */
const LAST_ATTEMPT = "runner-token-environment-admin";

interface Staged {
  /** The attacker's runner client (its token for its own `build`). */
  runner: ChaosApiClient;
  /** The victim's waiting call, as the attacker would spell it. */
  victimCallId: string;
  victimSession: string;
}

let staged: Promise<Staged> | undefined;

/** Sets the scene once for every attempt of this file. */
function stage(ctx: EscapeContext): Promise<Staged> {
  staged ??= (async () => {
    for (const api of [ctx.victimApi, ctx.api]) {
      const created = await api.post(
        "/v1/environments",
        { name: SHARED_NAME },
        `env-${SHARED_NAME}-${Date.now()}`,
      );
      if (created.status !== 201 && created.status !== 409)
        throw new Error(`could not create environment: ${answerLine(created)}`);
    }
    const issued = await ctx.api.post(`/v1/environments/${SHARED_NAME}/tokens`, {}, `token-${Date.now()}`);
    if (issued.status !== 201) throw new Error(`could not issue a runner token: ${answerLine(issued)}`);
    const victimSession = ctx.newSession("victim-runner-call");
    const scenario = `esc-${victimSession}`;
    ctx.stack.llm.addScenario(scenario, {
      turns: [{ text: "Step 1.", toolCalls: [{ name: "bash", arguments: { command: "echo victim-call" } }] }],
      after: { text: "Done." },
    });
    const started = await ctx.victimApi.post(
      `/v1/sessions/${victimSession}/messages`,
      {
        text: `[scenario:${scenario}] go`,
        environment: SHARED_NAME,
        environmentWaitSeconds: VICTIM_WAIT_SECONDS,
      },
      `start-${victimSession}`,
    );
    if (started.status >= 300) throw new Error(`the victim's run did not start: ${answerLine(started)}`);
    // The call is waiting once the run shows it pending.
    const victimCallId = await waitForVictimCall(ctx, victimSession);
    // The victim's own run made its session's folder: that is the victim's doing, not an attempt's.
    ctx.rememberOthers();
    return {
      runner: new ChaosApiClient(ctx.stack.apiUrl, issued.body.token as string, CLIENT_BOUND_MS),
      victimCallId,
      victimSession,
    };
  })();
  return staged;
}

/**
 * The victim's waiting call id, once its environment shows the call waiting: `<session>.<slot>`,
 * the slot following the run's last stored entry (its assistant message). The attacker could
 * spell it too; reading the victim's session in S3 just spares the guess.
 */
async function waitForVictimCall(ctx: EscapeContext, sessionId: string): Promise<string> {
  const { bucket, prefix } = ctx.stack.s3().settings;
  const folder = `${prefix}tenants/${VICTIM_TENANT}/sessions/${sessionId}/entries/`;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const shown = await ctx.victimApi.get(`/v1/environments/${SHARED_NAME}`);
    const waiting = (shown.body as { waitingCalls?: number } | undefined)?.waitingCalls ?? 0;
    if (waiting > 0) {
      const page = await ctx.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: folder }));
      const seqs = (page.Contents ?? []).map((object) => Number((object.Key ?? "").slice(folder.length, -5)));
      if (seqs.length > 0) return `${sessionId}.${Math.max(...seqs) + 1}`;
    }
    await sleep(300);
  }
  throw new Error("the victim's call never waited for a runner");
}

/** What moved on the victim's side: its call ran, was taken, or its session holds the attacker's output. */
async function victimFindings(ctx: EscapeContext, scene: Staged, answer: ApiAnswer): Promise<string[]> {
  const findings: string[] = [];
  if (answer.status < 300 && answer.text.includes(scene.victimSession))
    findings.push(`the victim's call was handed to the attacker's runner (${answerLine(answer)})`);
  const results = await ctx.toolResults(scene.victimSession, ctx.victimApi);
  if (results.length > 0) findings.push(`the victim's call got a result: ${results[0]?.text ?? ""}`);
  return findings;
}

function attempt(
  id: string,
  description: string,
  send: (scene: Staged, ctx: EscapeContext) => Promise<ApiAnswer>,
  /** Any 2xx answer is a leak (a route that hands over data, not a call). */
  successLeaks = false,
): Attempt {
  return {
    id,
    class: "API",
    description,
    short: true,
    async run(ctx): Promise<Verdict> {
      const scene = await stage(ctx);
      try {
        const answer = await send(scene, ctx);
        const findings = await victimFindings(ctx, scene, answer);
        if (successLeaks && answer.status < 300)
          findings.push(`the API handed it over (${answerLine(answer)})`);
        return judge(findings, `API ${answerLine(answer)}`);
      } finally {
        if (id === LAST_ATTEMPT) await clearScene(ctx, scene);
      }
    },
  };
}

export const runnerAttempts: Attempt[] = [
  attempt(
    "runner-claim-same-name",
    "the attacker's runner claims calls of `build` while the victim's `build` has one waiting",
    (scene) =>
      scene.runner.post(
        `/v1/environments/${SHARED_NAME}/calls:claim`,
        { waitSeconds: 2, runs: ["mcp"] },
        "claim-1",
      ),
  ),
  attempt(
    "runner-result-victim-call",
    "the attacker's runner posts a result for the victim's call id",
    (scene) =>
      scene.runner.post(
        `/v1/environments/${SHARED_NAME}/calls/${scene.victimCallId}/result`,
        { claimId: "forged", output: { content: [{ type: "text", text: "pwned" }], isError: false } },
        "result-1",
      ),
  ),
  attempt("runner-heartbeat-victim-call", "the attacker's runner heartbeats the victim's call id", (scene) =>
    scene.runner.post(
      `/v1/environments/${SHARED_NAME}/calls/${scene.victimCallId}/heartbeat`,
      { claimId: "forged" },
      "heartbeat-1",
    ),
  ),
  attempt(
    "runner-token-session-routes",
    "the attacker's runner token as an API key: the victim's session, and the session list",
    async (scene) => {
      const list = await scene.runner.get("/v1/sessions");
      if (list.status < 300) return list;
      return scene.runner.get(`/v1/sessions/${scene.victimSession}`);
    },
  ),
  attempt(
    "runner-workspace-victim-session",
    "the attacker's runner asks for the workspace of the victim's session, whose call waits on the victim's `build`",
    (scene) => scene.runner.get(`/v1/environments/${SHARED_NAME}/sessions/${scene.victimSession}/workspace`),
    true,
  ),
  attempt(
    "runner-token-environment-admin",
    "the attacker's runner token issuing itself another token",
    (scene) => scene.runner.post(`/v1/environments/${SHARED_NAME}/tokens`, {}, "token-2"),
  ),
];

/** Ends the victim's waiting run, so later attempts find the worker idle and the victim's folder settled. */
async function clearScene(ctx: EscapeContext, scene: Staged): Promise<void> {
  staged = undefined;
  await ctx.victimApi.post(`/v1/sessions/${scene.victimSession}/abort`, {}, `abort-${scene.victimSession}`);
  await ctx.waitRun(scene.victimSession, 30_000, ctx.victimApi);
  ctx.rememberOthers();
}
