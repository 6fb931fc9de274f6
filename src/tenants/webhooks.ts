/**
 * Tenants' webhook endpoints and their deliveries in S3 (docs/integrations.md, "Webhooks"), under
 * the deployment's prefix:
 *
 * - `tenants/{tenantId}/webhooks/endpoints/{id}.json`: URL, event types, times, and the signing
 *   secrets (`whsec_…`), each sealed with the tenant vault's data key (`SecretStore.sealOwned`):
 *   the newest first; a rotated one keeps `expiresAt`, the end of its overlap window.
 * - `tenants/{tenantId}/webhooks/deliveries/{endpointId}/{inverted time}-{eventId}.json`: one
 *   delivery (status, attempts, last response, next attempt), keyed so a listing is newest first.
 *
 * Every read is under the caller's tenant: an id of another tenant's endpoint is simply absent.
 */
import { randomBytes } from "node:crypto";
import type { S3Client } from "@aws-sdk/client-s3";
import { z } from "zod";
import type { WebhookEvent } from "../contracts/webhooks";
import { BoundedCache } from "../core/bounded-cache";
import { mapWithLimit } from "../store/bounded-map";
import { JsonObjects } from "../store/json-objects";
import { listObjects } from "../store/s3-requests";
import { assertValidId } from "../store/session-keys";
import type { SecretStore } from "./secrets";

/** Endpoints one tenant may have. */
const MAX_WEBHOOK_ENDPOINTS = 20;
/** Deliveries one listing answers at most. */
const MAX_DELIVERIES_LISTED = 100;
/** How long a worker trusts its copy of a tenant's subscribed event types (ms). */
const SUBSCRIPTIONS_CACHE_MS = 10_000;
const READ_CONCURRENCY = 8;
const FORMAT = 1;
/** Inverted times sort newest first (13 digits of milliseconds cover the year 2286). */
const TIME_CEILING = 9_999_999_999_999;

const StoredSecretSchema = z.object({
  sealed: z.string(),
  createdAt: z.string(),
  expiresAt: z.string().optional(),
});

const StoredEndpointSchema = z.object({
  format: z.literal(FORMAT),
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** Set when the endpoint answered 410 Gone: nothing more is delivered to it. */
  disabledAt: z.string().optional(),
  secrets: z.array(StoredSecretSchema).min(1),
});
type StoredEndpoint = z.infer<typeof StoredEndpointSchema>;

/** An endpoint as the API shows it: never a secret. */
export interface WebhookEndpoint {
  id: string;
  url: string;
  events: string[];
  description?: string;
  createdAt: string;
  updatedAt: string;
  disabledAt?: string;
  /** Until when a rotated secret still signs (absent: one secret). */
  previousSecretExpiresAt?: string;
}

export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;

const DeliverySchema = z.object({
  eventId: z.string(),
  eventType: z.string(),
  sessionId: z.string(),
  endpointId: z.string(),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number().int().nonnegative(),
  createdAt: z.string(),
  updatedAt: z.string(),
  lastAttemptAt: z.string().optional(),
  /** The last answer: its HTTP status and a body excerpt, or why no answer came. */
  lastResponse: z
    .object({
      status: z.number().int().optional(),
      excerpt: z.string().optional(),
      error: z.string().optional(),
    })
    .optional(),
  nextAttemptAt: z.string().optional(),
});
export type WebhookDelivery = z.infer<typeof DeliverySchema>;

/** A new signing secret: `whsec_` and 32 random bytes in base64, as the Standard Webhooks libraries take it. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

export class TooManyEndpointsError extends Error {
  constructor() {
    super(`a tenant has at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints; delete one first`);
    this.name = "TooManyEndpointsError";
  }
}

export class WebhookStore {
  private readonly objects: JsonObjects;
  private readonly subscriptions: BoundedCache<string, string[]>;

  constructor(
    private readonly s3: S3Client,
    private readonly location: { bucket: string; prefix: string },
    private readonly vault: SecretStore,
    private readonly now: () => number = Date.now,
  ) {
    this.objects = new JsonObjects(s3, location.bucket, location.prefix);
    this.subscriptions = new BoundedCache({ capacity: 1000, ttlMs: SUBSCRIPTIONS_CACHE_MS, now });
  }

  private folder(tenantId: string): string {
    assertValidId("tenant", tenantId);
    return `${this.location.prefix}tenants/${tenantId}/webhooks/`;
  }

  private endpointKey(tenantId: string, id: string): string {
    assertEndpointId(id);
    return `${this.folder(tenantId)}endpoints/${id}.json`;
  }

  private deliveryKey(
    tenantId: string,
    endpointId: string,
    event: Pick<WebhookEvent, "id" | "timestamp">,
  ): string {
    assertEndpointId(endpointId);
    const inverted = String(TIME_CEILING - Date.parse(event.timestamp)).padStart(13, "0");
    return `${this.folder(tenantId)}deliveries/${endpointId}/${inverted}-${event.id}.json`;
  }

  /** Creates an endpoint; answers it and its first secret (shown once). */
  async create(
    tenantId: string,
    fields: { url: string; events: string[]; description?: string },
  ): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    if ((await this.ids(tenantId)).length >= MAX_WEBHOOK_ENDPOINTS) throw new TooManyEndpointsError();
    const id = `wh_${randomBytes(12).toString("hex")}`;
    const secret = newSigningSecret();
    const at = new Date(this.now()).toISOString();
    const stored: StoredEndpoint = {
      format: FORMAT,
      id,
      url: fields.url,
      events: [...new Set(fields.events)],
      ...(fields.description ? { description: fields.description } : {}),
      createdAt: at,
      updatedAt: at,
      secrets: [{ sealed: await this.vault.sealOwned(tenantId, secretContext(id), secret), createdAt: at }],
    };
    await this.objects.createIfAbsent(this.endpointKey(tenantId, id), stored);
    this.subscriptions.delete(tenantId);
    return { endpoint: publicOf(stored), secret };
  }

  async get(tenantId: string, id: string): Promise<WebhookEndpoint | undefined> {
    const stored = await this.read(tenantId, id);
    return stored && publicOf(stored);
  }

  async list(tenantId: string): Promise<WebhookEndpoint[]> {
    const ids = await this.ids(tenantId);
    const found = await mapWithLimit(ids, READ_CONCURRENCY, (id) => this.read(tenantId, id));
    return found.filter((stored): stored is StoredEndpoint => stored !== undefined).map(publicOf);
  }

  /** Removes the endpoint (its delivery records stay in S3, listed nowhere): false when the tenant has none by that id. */
  async delete(tenantId: string, id: string): Promise<boolean> {
    if (!(await this.read(tenantId, id))) return false;
    await this.objects.remove(this.endpointKey(tenantId, id));
    this.subscriptions.delete(tenantId);
    return true;
  }

  /**
   * A new secret for the endpoint (answered once); the current one keeps signing until
   * `overlapMs` from now. Secrets whose overlap ended are dropped. Undefined: no such endpoint.
   */
  async rotate(
    tenantId: string,
    id: string,
    overlapMs: number,
  ): Promise<{ secret: string; endpoint: WebhookEndpoint } | undefined> {
    const key = this.endpointKey(tenantId, id);
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.objects.readVersioned(key, StoredEndpointSchema);
      if (!current || current.value.id !== id) return undefined;
      const now = this.now();
      const at = new Date(now).toISOString();
      const expiresAt = new Date(now + overlapMs).toISOString();
      const secret = newSigningSecret();
      const kept = current.value.secrets
        .filter((old) => old.expiresAt === undefined || Date.parse(old.expiresAt) > now)
        .map((old) => ({
          ...old,
          expiresAt: old.expiresAt && old.expiresAt < expiresAt ? old.expiresAt : expiresAt,
        }))
        .filter((old) => overlapMs > 0 || old.expiresAt > at);
      const stored: StoredEndpoint = {
        ...current.value,
        updatedAt: at,
        secrets: [
          { sealed: await this.vault.sealOwned(tenantId, secretContext(id), secret), createdAt: at },
          ...kept,
        ],
      };
      if (await this.objects.replaceIfMatch(key, stored, current.etag))
        return { secret, endpoint: publicOf(stored) };
    }
    throw new Error(`the rotation of webhook endpoint ${id} lost 5 races to other writes; try again`);
  }

  /** Marks the endpoint disabled (it answered 410 Gone). */
  async disable(tenantId: string, id: string): Promise<void> {
    const key = this.endpointKey(tenantId, id);
    const current = await this.objects.readVersioned(key, StoredEndpointSchema);
    if (!current || current.value.disabledAt) return;
    await this.objects.replaceIfMatch(
      key,
      { ...current.value, disabledAt: new Date(this.now()).toISOString() },
      current.etag,
    );
    this.subscriptions.delete(tenantId);
  }

  /**
   * What a delivery needs: the URL, its subscription and the secrets that sign now (newest
   * first, those past their overlap left out), decrypted. Undefined: no such endpoint.
   */
  async forDelivery(
    tenantId: string,
    id: string,
  ): Promise<{ url: string; events: string[]; disabled: boolean; secrets: string[] } | undefined> {
    const stored = await this.read(tenantId, id);
    if (!stored) return undefined;
    const now = this.now();
    const live = stored.secrets.filter(
      (secret) => secret.expiresAt === undefined || Date.parse(secret.expiresAt) > now,
    );
    const secrets = await Promise.all(
      live.map((secret) => this.vault.openOwned(tenantId, secretContext(id), secret.sealed)),
    );
    return { url: stored.url, events: stored.events, disabled: stored.disabledAt !== undefined, secrets };
  }

  /**
   * The event types any enabled endpoint of the tenant takes, cached for 10 s per process: what
   * a run learns when it opens its session (one LIST per tenant per 10 s for a tenant with none).
   */
  subscribedTypes(tenantId: string): Promise<string[]> {
    return this.subscriptions.getOrLoad(tenantId, async () => {
      const endpoints = await this.list(tenantId);
      return [
        ...new Set(
          endpoints.filter((endpoint) => !endpoint.disabledAt).flatMap((endpoint) => endpoint.events),
        ),
      ];
    });
  }

  /** Writes a delivery's record (created pending, then updated by each attempt). */
  async recordDelivery(tenantId: string, event: WebhookEvent, delivery: WebhookDelivery): Promise<void> {
    await this.objects.overwrite(this.deliveryKey(tenantId, delivery.endpointId, event), delivery);
  }

  /** Creates a delivery's record unless one exists (a retried publish keeps what attempts wrote). */
  async createDelivery(tenantId: string, event: WebhookEvent, delivery: WebhookDelivery): Promise<void> {
    await this.objects.createIfAbsent(this.deliveryKey(tenantId, delivery.endpointId, event), delivery);
  }

  async readDelivery(
    tenantId: string,
    endpointId: string,
    event: WebhookEvent,
  ): Promise<WebhookDelivery | undefined> {
    return this.objects.read(this.deliveryKey(tenantId, endpointId, event), DeliverySchema);
  }

  /** The endpoint's deliveries, newest first, at most `limit`. */
  async deliveries(
    tenantId: string,
    endpointId: string,
    limit = MAX_DELIVERIES_LISTED,
  ): Promise<WebhookDelivery[]> {
    assertEndpointId(endpointId);
    const prefix = `${this.folder(tenantId)}deliveries/${endpointId}/`;
    const keys: string[] = [];
    for await (const object of listObjects(this.s3, { Bucket: this.location.bucket, Prefix: prefix })) {
      if (object.Key) keys.push(object.Key);
      if (keys.length >= limit) break;
    }
    const found = await mapWithLimit(keys, READ_CONCURRENCY, (key) => this.objects.read(key, DeliverySchema));
    return found.filter((delivery): delivery is WebhookDelivery => delivery !== undefined);
  }

  private async ids(tenantId: string): Promise<string[]> {
    const folder = `${this.folder(tenantId)}endpoints/`;
    const ids: string[] = [];
    for await (const object of listObjects(this.s3, { Bucket: this.location.bucket, Prefix: folder })) {
      const id = /^(wh_[0-9a-f]{24})\.json$/.exec(object.Key?.slice(folder.length) ?? "")?.[1];
      if (id) ids.push(id);
    }
    return ids.sort();
  }

  private async read(tenantId: string, id: string): Promise<StoredEndpoint | undefined> {
    if (!WEBHOOK_ENDPOINT_ID.test(id)) return undefined;
    const stored = await this.objects.read(this.endpointKey(tenantId, id), StoredEndpointSchema);
    return stored?.id === id ? stored : undefined;
  }
}

/** An endpoint's id: `wh_` and 24 hex digits. */
export const WEBHOOK_ENDPOINT_ID = /^wh_[0-9a-f]{24}$/;

function assertEndpointId(id: string): void {
  if (!WEBHOOK_ENDPOINT_ID.test(id)) throw new RangeError("invalid webhook endpoint id");
}

/** What an endpoint's sealed secrets are bound to. */
const secretContext = (endpointId: string) => `webhook-secret/${endpointId}`;

function publicOf(stored: StoredEndpoint): WebhookEndpoint {
  const previous = stored.secrets
    .slice(1)
    .map((secret) => secret.expiresAt)
    .filter(Boolean)
    .sort()
    .at(-1);
  return {
    id: stored.id,
    url: stored.url,
    events: stored.events,
    ...(stored.description ? { description: stored.description } : {}),
    createdAt: stored.createdAt,
    updatedAt: stored.updatedAt,
    ...(stored.disabledAt ? { disabledAt: stored.disabledAt } : {}),
    ...(previous ? { previousSecretExpiresAt: previous } : {}),
  };
}
