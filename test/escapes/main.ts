/**
 * `npm run escapes -- [--short] [--only <text>]`: an attacker holding one tenant's API key and a
 * scripted model tries to get out, against the real API, worker, bubblewrap sandbox and S3 server
 * of one local stack (test/chaos/stack.ts). Every attempt is judged by its outcome (canaries, see
 * canaries.ts); the results go to bench/results/escapes.{md,json} (`escapes-short` for --short).
 * Exit code: 0 nothing escaped, 1 an attempt escaped, 2 usage error or the suite itself failed
 * (the stack did not start, an attempt could not be carried out). docs/escapes.md.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { createS3Client } from "../../src/store/s3-config";
import { ChaosApiClient } from "../chaos/api-client";
import { startChaosStack } from "../chaos/stack";
import { startAttacker } from "./attacker";
import type { Attempt } from "./attempt";
import { ALL_ATTEMPTS } from "./attempts";
import { ESCAPES_WORKSPACE_MB } from "./attempts/quota";
import { ATTACKER_SECRET, storeSecretCanaries, VICTIM_SECRET } from "./attempts/secrets";
import { findTokens, layOutCanaries } from "./canaries";
import { ATTACKER_TENANT, EscapeContext, type Form, PROBE_TENANT, VICTIM_TENANT } from "./context";
import { type AttemptRecord, renderMarkdown, summarize, writeEscapeResults } from "./report";

/** One API call keeps retrying 5xx and network errors this long (an attack answered 5xx is refused). */
const API_CALL_BOUND_MS = 5_000;
/** An attempt taking longer than this is cut off and counted as an error. */
const ATTEMPT_BOUND_MS = 15 * 60_000;

const USAGE = `usage: npm run escapes -- [--short] [--only <text>]
  --short        the CI form: a subset of every class, race loops shortened
  --only <text>  only the attempts whose id contains <text> (repeatable)
Every KEEL_* variable of the environment is passed to the API server and the worker (operator
settings such as a model URL allowlist); the stack's own settings win.`;

const say = (line: string) => process.stdout.write(`escapes: ${line}\n`);

function parseArgs(args: string[]): { form: Form; only: string[] } | string {
  let form: Form = "long";
  const only: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i];
    if (arg === "--short") form = "short";
    else if (arg === "--only" && args[i + 1]) only.push(args[++i] as string);
    else return arg === "--help" || arg === "-h" ? USAGE : `unknown argument ${arg}\n${USAGE}`;
  }
  return { form, only };
}

/** KEEL_* variables of the caller's environment (an operator's settings for the stack). */
function operatorEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (pair): pair is [string, string] => pair[0].startsWith("KEEL_") && pair[1] !== undefined,
    ),
  );
}

async function runAttempt(ctx: EscapeContext, attempt: Attempt): Promise<AttemptRecord> {
  const started = Date.now();
  ctx.rememberOthers();
  let record: Omit<AttemptRecord, "seconds">;
  try {
    const verdict = await Promise.race([
      attempt.run(ctx),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error("the attempt took too long")), ATTEMPT_BOUND_MS).unref(),
      ),
    ]);
    record = { id: attempt.id, class: attempt.class, description: attempt.description, ...verdict };
  } catch (error) {
    record = {
      id: attempt.id,
      class: attempt.class,
      description: attempt.description,
      outcome: "error",
      stoppedBy: error instanceof Error ? error.message : String(error),
    };
  }
  return { ...record, seconds: Math.round((Date.now() - started) / 100) / 10 };
}

async function main(): Promise<number> {
  const parsed = parseArgs(process.argv.slice(2));
  if (typeof parsed === "string") {
    process.stderr.write(`${parsed}\n`);
    return parsed === USAGE ? 0 : 2;
  }
  const attempts = ALL_ATTEMPTS.filter(
    (attempt) =>
      (parsed.form === "long" || attempt.short) &&
      (parsed.only.length === 0 || parsed.only.some((text) => attempt.id.includes(text))),
  );
  say(`${parsed.form} form: ${attempts.length} attempts`);
  const started = performance.now();
  const secrets = {
    OPENAI_API_KEY: `sk-canary-${randomBytes(16).toString("hex")}`,
    ANTHROPIC_API_KEY: `sk-ant-canary-${randomBytes(16).toString("hex")}`,
    ESCAPES_CANARY_SECRET: `canary-${randomBytes(16).toString("hex")}`,
  };
  // Tenant secrets' values: stored through the API, held by no process's environment.
  const tenantSecrets = {
    [ATTACKER_SECRET]: `tenant-canary-${randomBytes(16).toString("hex")}`,
    [VICTIM_SECRET]: `tenant-canary-${randomBytes(16).toString("hex")}`,
  };
  // The operator's vault key (docs/deploy.md, "Tenant secrets"): a key file, as keel dev has.
  const vaultKeyFile = join(mkdtempSync(join(tmpdir(), "keel-escapes-vault-")), "vault.key");
  writeFileSync(vaultKeyFile, randomBytes(32).toString("base64"), { mode: 0o600 });
  // The operator's admin key: the stack serves the admin API, as a deployment with tenants does.
  const operatorKey = `keel-operator-${randomBytes(16).toString("hex")}`;
  const stack = await startChaosStack({
    name: "escapes",
    tenants: [ATTACKER_TENANT, VICTIM_TENANT, PROBE_TENANT],
    env: {
      // The suite's operator keeps a call's CPU time short, so the burn attempt is judged in seconds.
      KEEL_SANDBOX_CPU_SECONDS: "5",
      // And a small workspace quota, so filling it takes seconds.
      KEEL_WORKSPACE_MAX_MB: String(ESCAPES_WORKSPACE_MB),
      KEEL_ADMIN_KEY_SHA256: createHash("sha256").update(operatorKey).digest("hex"),
      ...operatorEnv(),
      ESCAPES_CANARY_SECRET: secrets.ESCAPES_CANARY_SECRET,
      KEEL_VAULT_KEY_FILE: vaultKeyFile,
    },
    workerEnv: { OPENAI_API_KEY: secrets.OPENAI_API_KEY, ANTHROPIC_API_KEY: secrets.ANTHROPIC_API_KEY },
  });
  say(`stack up in ${Math.round((performance.now() - started) / 1000)} s (data: ${stack.dir})`);
  const attacker = await startAttacker();
  const s3: S3Client = createS3Client(stack.s3().settings);
  let keep = process.env.KEEL_KEEP_ESCAPES_DATA === "1";
  try {
    await stack.startWorker("primary");
    const client = (tenant: string) =>
      new ChaosApiClient(stack.apiUrl, stack.apiKeys[tenant] as string, API_CALL_BOUND_MS);
    const canaries = layOutCanaries(stack.dir, {
      ...secrets,
      ...tenantSecrets,
      KEEL_S3_SECRET_ACCESS_KEY: stack.s3().settings.secretAccessKey ?? secrets.ESCAPES_CANARY_SECRET,
    });
    const ctx = new EscapeContext(
      parsed.form,
      stack,
      client(ATTACKER_TENANT),
      client(VICTIM_TENANT),
      client(PROBE_TENANT),
      attacker,
      canaries,
      s3,
      "victim-session",
      new ChaosApiClient(stack.apiUrl, operatorKey, API_CALL_BOUND_MS),
    );
    await storeSecretCanaries(ctx, tenantSecrets);
    const victim = await ctx.play(
      ctx.victimSession,
      [[{ name: "bash", arguments: { command: `echo ${canaries.victimContent} > victim.txt && echo ok` } }]],
      {},
      60_000,
      ctx.victimApi,
    );
    if (victim.run?.status !== "completed")
      throw new Error(
        `the victim's session did not complete: ${JSON.stringify(victim.run ?? victim.answer.text)}`,
      );

    const records: AttemptRecord[] = [];
    for (const attempt of attempts) {
      const receivedBefore = attacker.received().length;
      const record = await runAttempt(ctx, attempt);
      // Outcomes every attempt is judged by, whatever it tried.
      const moved: string[] = [];
      const host = canaries.hostChanges();
      if (host) moved.push(`the host folder changed: ${host}`);
      const others = ctx.othersChanges();
      if (others) moved.push(`another tenant's folder changed: ${others}`);
      for (const entry of attacker.received().slice(receivedBefore))
        moved.push(...findTokens(canaries, `${entry.line}\n${entry.text}`, "a request to the attacker"));
      if (moved.length > 0 && record.outcome !== "error") {
        record.stoppedBy =
          record.outcome === "escaped" ? `${record.stoppedBy}; ${moved.join("; ")}` : moved.join("; ");
        record.outcome = "escaped";
      }
      records.push(record);
      say(
        `${record.outcome.padEnd(7)} ${record.class.padEnd(7)} ${record.id} (${record.seconds} s): ${record.stoppedBy.slice(0, 140)}`,
      );
    }
    const summary = summarize(parsed.form, records, performance.now() - started);
    const path = writeEscapeResults(summary);
    process.stdout.write(`\n${renderMarkdown(summary).split("\n").slice(0, 12).join("\n")}\n`);
    say(`results written to ${path}`);
    const escaped = records.filter((record) => record.outcome === "escaped");
    const errors = records.filter((record) => record.outcome === "error");
    if (escaped.length > 0)
      say(`FAIL: ${escaped.length} escaped: ${escaped.map((record) => record.id).join(", ")}`);
    if (errors.length > 0)
      say(`the suite could not carry out: ${errors.map((record) => record.id).join(", ")}`);
    keep ||= escaped.length > 0 || errors.length > 0;
    if (keep) say(`stack data kept in ${stack.dir}`);
    return errors.length > 0 ? 2 : escaped.length > 0 ? 1 : 0;
  } finally {
    s3.destroy();
    await attacker.close();
    await stack.close({ keepData: keep });
    rmSync(dirname(vaultKeyFile), { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `escapes: the suite itself failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(2);
  },
);
