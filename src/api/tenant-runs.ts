/**
 * What a tenant's settings do to a message that may start a run (docs/api.md, "Tenant settings"
 * and "Quotas"): its default run settings go under the message's own, the models it asks for are
 * checked against the tenant's allowed models and hosts, and a start is admitted against the
 * tenant's quotas before anything is started.
 */
import type { S3Client } from "@aws-sdk/client-s3";
import { WorkflowNotFoundError } from "@temporalio/client";
import type { RunClient } from "../run-client/run-client";
import type { S3Settings } from "../store/s3-config";
import {
  type Admission,
  CLAIM_GRACE_MS,
  QuotaExceededError,
  QuotaGate,
  type SlotClaim,
} from "../tenants/admission";
import { KeyResolver } from "../tenants/key-cache";
import { modelRefusal } from "../tenants/settings";
import { StoredSlackTeams } from "../tenants/slack-teams";
import { TenantStore } from "../tenants/store";
import type { TenantSettings } from "../tenants/types";
import { TenantUsage, tenantBudgetState } from "../tenants/usage";
import { WorkflowType } from "../workflows/references";
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
 * Admits the start of `ref`'s run under the tenant's quotas; undefined when the tenant has none
 * or the session's run is live (`isLive`: the message is then a delivery, not a start). Throws
 * the 429 problem when a quota is reached, having started and kept nothing.
 */
export async function admitStart(
  tenants: TenantServices,
  settings: TenantSettings,
  ref: SessionRef,
  isLive: () => Promise<boolean>,
): Promise<Admission | undefined> {
  if (settings.quotas === undefined || Object.keys(settings.quotas).length === 0) return undefined;
  if (await isLive()) return undefined;
  try {
    return await tenants.quotas.admit(ref.tenantId, ref.sessionId, settings.quotas);
  } catch (error) {
    if (error instanceof QuotaExceededError) throw quotaProblem(error);
    throw error;
  }
}

/**
 * Whether the session's run is live: Temporal describes an open agent-run workflow under its id
 * (from the workflow's mutable state, not from visibility). What holds a concurrency slot.
 */
export async function sessionRunIsLive(runs: RunClient, ref: SessionRef): Promise<boolean> {
  try {
    const description = await runs.handle(ref).describe();
    return description.status.name === "RUNNING" && description.type === WorkflowType.agentRun;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/**
 * Whether a concurrency slot's claim still holds: its session's run is live, or no run of the
 * session closed after the claim and the claim is younger than CLAIM_GRACE_MS (its start may be
 * under way). A released claim (claimedAt 0) holds only while a run of the session is live.
 */
export async function claimHeld(
  runs: RunClient,
  tenantId: string,
  claim: SlotClaim,
  now: number,
): Promise<boolean> {
  let description: Awaited<ReturnType<ReturnType<RunClient["handle"]>["describe"]>> | undefined;
  try {
    description = await runs.handle({ tenantId, sessionId: claim.sessionId }).describe();
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
  if (description?.status.name === "RUNNING")
    return description.type === WorkflowType.agentRun || now - claim.claimedAt < CLAIM_GRACE_MS;
  const closedAfterClaim = (description?.closeTime?.getTime() ?? 0) > claim.claimedAt;
  return !closedAfterClaim && now - claim.claimedAt < CLAIM_GRACE_MS;
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
    quotas: new QuotaGate({
      store,
      isHeld: async (tenantId, claim) => claimHeld(await runs(), tenantId, claim, Date.now()),
      checkBudget: async (tenantId, quotas) => {
        const budget = await tenantBudgetState(usage, tenantId, quotas);
        if (budget.reached !== undefined)
          throw new QuotaExceededError(
            budget.reached,
            quotas[budget.reached] ?? 0,
            budget.resetsInSeconds ?? 60,
          );
      },
    }),
  };
}
