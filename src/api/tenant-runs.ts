/**
 * What a tenant's settings do to a message that may start a run (docs/api.md, "Tenant settings"
 * and "Quotas"): its default run settings go under the message's own, the models it asks for are
 * checked against the tenant's allowed models and hosts, and a start is admitted against the
 * tenant's quotas before anything is started.
 */
import type { S3Client } from "@aws-sdk/client-s3";
import type { RunClient } from "../run-client/run-client";
import type { S3Settings } from "../store/s3-config";
import { type Admission, QuotaExceededError, type QuotaGate } from "../tenants/admission";
import { KeyResolver } from "../tenants/key-cache";
import { admitRunStart, quotaGate } from "../tenants/run-quotas";
import { modelRefusal } from "../tenants/settings";
import { StoredSlackTeams } from "../tenants/slack-teams";
import { TenantStore } from "../tenants/store";
import type { TenantSettings } from "../tenants/types";
import { TenantUsage } from "../tenants/usage";
import type { SessionRef } from "../workflows/types";
import type { RouteContext } from "./app";
import { ProblemError } from "./problems";
import type { MessageBody, MessageBodyOptions } from "./schemas";
import { tenantDefaultsSchema } from "./schemas/tenants";

/** The tenant store and what the API builds on it. */
export interface TenantServices {
  store: TenantStore;
  keys: KeyResolver;
  quotas: QuotaGate;
  usage: TenantUsage;
  /** The Slack teams tenants map in their settings (cached like keys). */
  slackTeams: StoredSlackTeams;
}

/** The part of a message body a tenant's defaults may fill. */
type RunFields = Omit<MessageBody, "text" | "delivery">;

/**
 * The body with the tenant's default run settings under its own fields (a field the message
 * gives wins), after checking every model it names against the tenant's settings: 400 when the
 * stored defaults no longer pass the deployment's rules, 403 `model-not-allowed` naming the
 * setting that refuses a model.
 */
export function withTenantSettings<B extends Pick<MessageBody, "model" | "agents">>(
  settings: TenantSettings,
  body: B,
  options: MessageBodyOptions,
  defaultModel: string,
): B {
  let merged = body;
  if (settings.defaults !== undefined) {
    const parsed = tenantDefaultsSchema(options).safeParse(settings.defaults);
    if (!parsed.success)
      throw new ProblemError(
        "invalid-request",
        `The tenant's default run settings (tenant setting \`defaults\`) are not allowed on this deployment: ${parsed.error.issues
          .slice(0, 3)
          .map((issue) => `${issue.path.join(".")}: ${issue.message}`)
          .join("; ")}`,
        { setting: "defaults" },
      );
    const own = Object.fromEntries(Object.entries(body).filter(([, value]) => value !== undefined));
    merged = { ...(parsed.data as RunFields), ...own } as B;
  }
  const models = [
    merged.model ?? defaultModel,
    ...(merged.agents ?? []).flatMap((agent) => agent.model ?? []),
  ];
  for (const model of models) {
    const refusal = modelRefusal(settings, model);
    if (refusal) throw new ProblemError("model-not-allowed", refusal.message, { setting: refusal.setting });
  }
  return merged;
}

/** The 429 of a start over a quota: which quota, its limit, and when to retry. */
export function quotaProblem(error: QuotaExceededError): ProblemError {
  return new ProblemError(
    "quota-exceeded",
    error.message,
    { quota: error.quota, limit: error.limit, retryAfterSeconds: error.retryAfterSeconds },
    { "retry-after": String(error.retryAfterSeconds) },
  );
}

/**
 * Admits the start of `ref`'s run under the tenant's quotas (`admitRunStart`). Throws the 429
 * problem when a quota is reached, having started and kept nothing.
 */
export async function admitStart(
  tenants: TenantServices,
  settings: TenantSettings,
  ref: SessionRef,
  runs: RunClient,
): Promise<Admission | undefined> {
  try {
    return await admitRunStart(tenants.quotas, settings.quotas, ref, runs);
  } catch (error) {
    if (error instanceof QuotaExceededError) throw quotaProblem(error);
    throw error;
  }
}

/**
 * Counts a run the API started in its tenant's usage (once per run id). A failed write is logged,
 * not answered: the run has started, and the message must not be sent again.
 */
export async function recordRunStart(deps: RouteContext, ref: SessionRef, runId: string): Promise<void> {
  try {
    await deps.tenants?.usage.recordRun(ref.tenantId, { sessionId: ref.sessionId, runId, atMs: deps.now() });
  } catch (error) {
    deps.log({ level: "warn", msg: "the run start was not recorded in usage", error: String(error) });
  }
}

/** The tenant store in the deployment's bucket, its key cache and quota gate. */
export function tenantServices(
  s3: S3Client,
  settings: Pick<S3Settings, "bucket" | "prefix">,
  runs: () => Promise<RunClient>,
): TenantServices {
  const store = new TenantStore(s3, settings.bucket, settings.prefix);
  const usage = new TenantUsage(s3, settings.bucket, settings.prefix);
  return {
    store,
    keys: new KeyResolver(store),
    slackTeams: new StoredSlackTeams(store),
    usage,
    quotas: quotaGate(store, usage, runs),
  };
}
