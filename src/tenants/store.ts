/**
 * Tenants, their API keys and settings in S3, beside the sessions. Objects (under the
 * deployment's prefix):
 *
 * - `tenants/{tenantId}/tenant.json`: the tenant.
 * - `tenants/{tenantId}/settings.json`: its settings (absent: none).
 * - `tenants/{tenantId}/keys/{keyId}.json`: one API key record (digest, label, revocation).
 * - `tenant-keys/{sha256 of the key}.json`: which tenant and record a key belongs to, so a
 *   presented key is resolved with two reads and no listing.
 *
 * Keys are generated here (32 random bytes) and returned once; only their digest is stored.
 */
import { randomBytes } from "node:crypto";
import { ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { sha256Hex } from "../store/digest";
import { JsonObjects } from "../store/json-objects";
import { listObjects } from "../store/s3-requests";
import { assertValidId } from "../store/session-keys";
import {
  type ApiKeyRecord,
  ApiKeyRecordSchema,
  KeyPointerSchema,
  type Tenant,
  TenantSchema,
  type TenantSettings,
  TenantSettingsSchema,
} from "./types";

/** Attempts of a read-modify-write that lost a race (revocation). */
const REPLACE_ATTEMPTS = 5;

export class TenantStore {
  readonly objects: JsonObjects;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    /** The deployment's S3 prefix, used verbatim. */
    readonly prefix: string,
    private readonly now: () => number = Date.now,
  ) {
    this.objects = new JsonObjects(s3, bucket, prefix);
  }

  /** `tenants/{tenantId}/` (the tenant's folder: quotas and usage live under it too). */
  folder(tenantId: string): string {
    assertValidId("tenant", tenantId);
    return `${this.prefix}tenants/${tenantId}/`;
  }

  /** Creates the tenant; undefined when one with this id exists. */
  async createTenant(id: string, name?: string): Promise<Tenant | undefined> {
    const tenant: Tenant = { id, ...(name !== undefined ? { name } : {}), createdAt: this.timestamp() };
    return (await this.objects.createIfAbsent(`${this.folder(id)}tenant.json`, tenant)) ? tenant : undefined;
  }

  getTenant(id: string): Promise<Tenant | undefined> {
    return this.objects.read(`${this.folder(id)}tenant.json`, TenantSchema);
  }

  /** Every tenant, in id order (one LIST per 1,000 tenants plus one read each). */
  async listTenants(): Promise<Tenant[]> {
    const ids: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.s3.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: `${this.prefix}tenants/`,
          Delimiter: "/",
          ContinuationToken: token,
        }),
      );
      for (const common of page.CommonPrefixes ?? []) {
        const id = common.Prefix?.slice(`${this.prefix}tenants/`.length).replace(/\/$/, "");
        if (id) ids.push(id);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    const tenants = await Promise.all(ids.map((id) => this.getTenant(id)));
    return tenants.filter((tenant): tenant is Tenant => tenant !== undefined);
  }

  /**
   * A new API key for the tenant: the key (returned here only) and its stored record. The record
   * is written before the digest's pointer, so a key that authenticates always has its record.
   */
  async createKey(tenantId: string, label?: string): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = `keel_${randomBytes(32).toString("base64url")}`;
    const record: ApiKeyRecord = {
      id: `key_${randomBytes(8).toString("hex")}`,
      ...(label !== undefined ? { label } : {}),
      digest: sha256Hex(key),
      createdAt: this.timestamp(),
    };
    if (!(await this.objects.createIfAbsent(this.keyRecordKey(tenantId, record.id), record)))
      throw new Error("API key id collision");
    if (!(await this.objects.createIfAbsent(this.pointerKey(record.digest), { tenantId, keyId: record.id })))
      throw new Error("API key digest collision");
    return { key, record };
  }

  async listKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    const records: ApiKeyRecord[] = [];
    for await (const object of listObjects(this.s3, {
      Bucket: this.bucket,
      Prefix: `${this.folder(tenantId)}keys/`,
    })) {
      if (!object.Key?.endsWith(".json")) continue;
      const record = await this.objects.read(object.Key, ApiKeyRecordSchema);
      if (record) records.push(record);
    }
    return records.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  /** Marks the key revoked (kept, so the listing shows when); undefined when no such key. */
  async revokeKey(tenantId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
    const key = this.keyRecordKey(tenantId, keyId);
    for (let attempt = 0; attempt < REPLACE_ATTEMPTS; attempt++) {
      const current = await this.objects.readVersioned(key, ApiKeyRecordSchema);
      if (!current) return undefined;
      if (current.value.revokedAt !== undefined) return current.value;
      const revoked = { ...current.value, revokedAt: this.timestamp() };
      if (await this.objects.replaceIfMatch(key, revoked, current.etag)) return revoked;
    }
    throw new Error(`the revocation of ${keyId} lost ${REPLACE_ATTEMPTS} races; try again`);
  }

  /** The tenant a key digest authenticates: undefined when unknown or revoked. */
  async tenantOfDigest(digest: string): Promise<string | undefined> {
    const pointer = await this.objects.read(this.pointerKey(digest), KeyPointerSchema);
    if (!pointer) return undefined;
    const record = await this.objects.read(
      this.keyRecordKey(pointer.tenantId, pointer.keyId),
      ApiKeyRecordSchema,
    );
    return record && record.digest === digest && record.revokedAt === undefined
      ? pointer.tenantId
      : undefined;
  }

  /** The tenant's settings; an empty object when none are set. */
  async getSettings(tenantId: string): Promise<TenantSettings> {
    return (await this.objects.read(`${this.folder(tenantId)}settings.json`, TenantSettingsSchema)) ?? {};
  }

  async putSettings(tenantId: string, settings: TenantSettings): Promise<void> {
    await this.objects.overwrite(`${this.folder(tenantId)}settings.json`, settings);
  }

  private keyRecordKey(tenantId: string, keyId: string): string {
    return `${this.folder(tenantId)}keys/${keyId}.json`;
  }

  private pointerKey(digest: string): string {
    return `${this.prefix}tenant-keys/${digest}.json`;
  }

  private timestamp(): string {
    return new Date(this.now()).toISOString();
  }
}
