/**
 * What a tenant's settings do to a message that may start a run (docs/api.md, "Tenant settings"
 * and "Quotas"): its default run settings go under the message's own, the models it asks for are
 * checked against the tenant's allowed models and hosts; the services of the one start path
 * (run-client/start-or-deliver.ts), which admits a start under the tenant's quotas, and the
 * problem of each of its refusals.
 */
import type { S3Client } from "@aws-sdk/client-s3";
import { DeliveryRefusal } from "../core/failure-types";
import { secretNamesOf } from "../mcp/types";
import type { RunClient } from "../run-client/run-client";
import type { DeliveryRefusalType, MessageRefusal, StartServices } from "../run-client/start-or-deliver";
import type { S3Settings } from "../store/s3-config";
import { KeyResolver } from "../tenants/key-cache";
import { quotaGate } from "../tenants/run-quotas";
import { modelRefusal } from "../tenants/settings";
import { StoredSlackTeams } from "../tenants/slack-teams";
import { TenantStore } from "../tenants/store";
import type { TenantSettings } from "../tenants/types";
import { TenantUsage } from "../tenants/usage";
import { ProblemError, type ProblemSlug } from "./problems";
import type { RouteContext, TenantServices } from "./route-context";
import type { MessageBody, MessageBodyOptions } from "./schemas";
import { tenantDefaultsSchema } from "./schemas/tenants";

/** The part of a message body a tenant's defaults may fill: the run settings it asks for. */
export type RunFields = Omit<MessageBody, "text" | "delivery">;

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
    ...runModels(merged.model ?? defaultModel),
    ...(merged.agents ?? []).flatMap((agent) => agent.model ?? []),
  ];
  for (const model of models) {
    const refusal = modelRefusal(settings, model);
    if (refusal) throw new ProblemError("model-not-allowed", refusal.message, { setting: refusal.setting });
  }
  return merged;
}

/** Every model a message's `model` names: one, or the list a failing turn goes down. */
function runModels(model: string | readonly string[]): readonly string[] {
  return typeof model === "string" ? [model] : model;
}

/** The problem each refusal of the start path is answered with (docs/api.md, "Errors"). */
const REFUSAL_SLUGS: Record<DeliveryRefusalType, ProblemSlug> = {
  [DeliveryRefusal.busy]: "run-busy",
  [DeliveryRefusal.queueFull]: "queue-full",
  [DeliveryRefusal.invalid]: "invalid-message",
  [DeliveryRefusal.ended]: "run-ended",
};

/**
 * A refused message as its problem: 429 `quota-exceeded` naming the quota, its limit and when to
 * retry; the run's refusals as 409 (busy, ended), 429 (queue full, retry after 1 s) or 400.
 */
export function refusalProblem(refusal: MessageRefusal): ProblemError {
  if (refusal.type === "quota-exceeded") {
    const { quota, limit, retryAfterSeconds } = refusal;
    return new ProblemError(
      "quota-exceeded",
      refusal.message,
      { quota, limit, retryAfterSeconds },
      { "retry-after": String(retryAfterSeconds) },
    );
  }
  const slug = REFUSAL_SLUGS[refusal.refusal];
  return new ProblemError(slug, refusal.message, {}, slug === "queue-full" ? { "retry-after": "1" } : {});
}

/** What the one start path (`startOrDeliver`) uses in the API: its quota gate, usage and log. */
export function startServices(deps: RouteContext, runs: RunClient): StartServices {
  return {
    runs,
    ...(deps.tenants ? { quotas: deps.tenants.quotas, usage: deps.tenants.usage } : {}),
    warn: (msg, fields) => deps.log({ level: "warn", msg, ...fields }),
    now: deps.now,
  };
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

/**
 * 422 `unusable-secrets` for a body (valid by its schema) that names tenant secrets (`secrets`, an MCP server's
 * `{secret: NAME}`) the run could not use: the deployment has no vault, `secrets` with network
 * "full" (the values are injected by the egress proxy, which "full" bypasses), or a name the
 * tenant does not have (a tenant only ever names its own: the check reads the tenant's names,
 * never a value).
 */
export async function refuseUnusableSecrets(
  deps: RouteContext,
  tenantId: string,
  body: Pick<RunFields, "secrets" | "network" | "mcpServers">,
  what: string,
): Promise<void> {
  const secrets = body.secrets ?? [];
  const named = [...new Set([...secrets, ...secretNamesOf(body.mcpServers ?? [])])];
  if (named.length === 0) return;
  const refuse = (path: string, message: string): never => {
    throw new ProblemError("unusable-secrets", `This ${what} ${message}`, { errors: [{ path, message }] });
  };
  const path = secrets.length > 0 ? "secrets" : "mcpServers";
  if (secrets.length > 0 && body.network === "full")
    refuse(
      "secrets",
      'names tenant secrets and asks for network "full": secrets are injected by the egress proxy, which "full" bypasses; use "none" or an allowlist',
    );
  if (!deps.vault)
    return refuse(path, "names tenant secrets, and this deployment has no vault configured (docs/deploy.md)");
  const have = new Set(await deps.vault.names(tenantId));
  const unknown = named.filter((name) => !have.has(name));
  if (unknown.length > 0)
    refuse(
      secrets.some((name) => !have.has(name)) ? "secrets" : "mcpServers",
      `names secrets the tenant does not have: ${unknown.join(", ")} (keel secret set NAME --host HOST)`,
    );
}
