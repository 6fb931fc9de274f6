/**
 * Tenants' secrets in S3 (docs/store.md, "Tenant secrets"), encrypted with a data key per tenant
 * (envelope encryption: the data key is stored wrapped by the deployment's key wrapper). Objects,
 * under the deployment's prefix:
 *
 * - `tenants/{tenantId}/secrets/{NAME}.json`: the binding, its times and version in clear, and the
 *   value as AES-256-GCM ciphertext whose additional data binds tenant, name and version (a
 *   ciphertext moved to another name, tenant or version does not open).
 * - `tenants/{tenantId}/secrets/data-key.json`: the tenant's data key, wrapped; created once by
 *   a conditional put, so two first `set`s racing agree on one key.
 *
 * Values are decrypted only by `resolve`, read fresh at each call (a rotation or deletion takes
 * effect at the next call); unwrapped data keys are cached for a short time, values never.
 */
import type { S3Client } from "@aws-sdk/client-s3";
import { z } from "zod";
import { BoundedCache } from "../core/bounded-cache";
import { mapWithLimit } from "../store/bounded-map";
import { readAfterConflict } from "../store/conditional-objects";
import { JsonObjects } from "../store/json-objects";
import { listObjects } from "../store/s3-requests";
import { assertValidId } from "../store/session-keys";
import { open, seal } from "../vault/crypto";
import type { KeyWrapper } from "../vault/key-wrapper";
import { keyWrapperOf, type VaultSettings } from "../vault/settings";
import {
  MAX_TENANT_SECRETS,
  type ResolvedSecret,
  SECRET_NAME,
  SECRET_PLACEMENTS,
  type SecretBinding,
  type SecretMetadata,
  type SecretResolver,
  type SecretsForCall,
} from "../vault/types";

/** How long an unwrapped data key is kept in memory (ms). */
const DATA_KEY_CACHE_MS = 5 * 60_000;
/** Unwrapped data keys kept at once (one per tenant). */
const DATA_KEY_CACHE_ENTRIES = 1000;
/** Parallel reads of one tenant's secret objects. */
const READ_CONCURRENCY = 8;
/** Attempts of a `set` that lost a race to another write of the same name. */
const WRITE_ATTEMPTS = 5;
const FORMAT = 1;

const StoredSecretSchema = z.object({
  format: z.literal(FORMAT),
  name: z.string().regex(SECRET_NAME),
  hosts: z.array(z.string()),
  in: z.array(z.enum(SECRET_PLACEMENTS as ["header", "basic-auth"])),
  createdAt: z.string(),
  updatedAt: z.string(),
  version: z.number().int().positive(),
  /** base64 of nonce ‖ AES-256-GCM ciphertext ‖ tag. */
  ciphertext: z.string(),
});
type StoredSecret = z.infer<typeof StoredSecretSchema>;

const StoredDataKeySchema = z.object({
  format: z.literal(FORMAT),
  wrapper: z.enum(["local-file", "aws-kms"]),
  wrapped: z.string(),
  createdAt: z.string(),
});

/** The file name of a tenant's wrapped data key (lower case: no secret's name can take it). */
const DATA_KEY_OBJECT = "data-key.json";
const SECRET_OBJECT = /^([A-Z][A-Z0-9_]{0,63})\.json$/;

/** A stored secret of the tenant was written for another name, or its data key under another wrapper. */
class VaultIntegrityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "VaultIntegrityError";
  }
}

/** The additional data a value's ciphertext binds. */
function valueContext(tenantId: string, name: string, version: number): Buffer {
  return Buffer.from(`keel-secret\0${tenantId}\0${name}\0${version}`, "utf8");
}

/** The additional data of a value sealed by `sealOwned` (never equal to a secret's: another label). */
function ownedContext(tenantId: string, context: string): Buffer {
  return Buffer.from(`keel-owned\0${tenantId}\0${context}`, "utf8");
}

export interface SetSecretResult {
  metadata: SecretMetadata;
  /** True when the name was new (version 1), false when an existing value was rotated. */
  created: boolean;
}

export class SecretStore implements SecretResolver {
  private readonly objects: JsonObjects;
  private readonly dataKeys: BoundedCache<string, Buffer>;

  constructor(
    private readonly s3: S3Client,
    private readonly location: { bucket: string; prefix: string },
    readonly wrapper: KeyWrapper,
    private readonly now: () => number = Date.now,
  ) {
    this.objects = new JsonObjects(s3, location.bucket, location.prefix);
    this.dataKeys = new BoundedCache({ capacity: DATA_KEY_CACHE_ENTRIES, ttlMs: DATA_KEY_CACHE_MS, now });
  }

  /** `tenants/{tenantId}/secrets/`. */
  folder(tenantId: string): string {
    assertValidId("tenant", tenantId);
    return `${this.location.prefix}tenants/${tenantId}/secrets/`;
  }

  /** The S3 key of a secret (the name must already be valid). */
  secretKey(tenantId: string, name: string): string {
    if (!SECRET_NAME.test(name)) throw new RangeError("invalid secret name");
    return `${this.folder(tenantId)}${name}.json`;
  }

  dataKeyKey(tenantId: string): string {
    return `${this.folder(tenantId)}${DATA_KEY_OBJECT}`;
  }

  /**
   * Creates the secret (version 1) or rotates it (version + 1, `createdAt` kept). The binding and
   * value must already be valid (types.ts rules, `parseAllowlist`); the caller checks them.
   * Throws `TooManySecretsError` when a new name would pass MAX_TENANT_SECRETS.
   */
  async set(tenantId: string, binding: SecretBinding, value: string): Promise<SetSecretResult> {
    const key = this.secretKey(tenantId, binding.name);
    const dataKey = await this.dataKey(tenantId);
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const current = await this.objects.readVersioned(key, StoredSecretSchema);
      if (!current && (await this.names(tenantId)).length >= MAX_TENANT_SECRETS)
        throw new TooManySecretsError();
      const timestamp = new Date(this.now()).toISOString();
      const version = (current?.value.version ?? 0) + 1;
      const stored: StoredSecret = {
        format: FORMAT,
        name: binding.name,
        hosts: [...binding.hosts],
        in: [...binding.in],
        createdAt: current?.value.createdAt ?? timestamp,
        updatedAt: timestamp,
        version,
        ciphertext: seal(
          dataKey,
          Buffer.from(value, "utf8"),
          valueContext(tenantId, binding.name, version),
        ).toString("base64"),
      };
      const written = current
        ? await this.objects.replaceIfMatch(key, stored, current.etag)
        : await this.objects.createIfAbsent(key, stored);
      if (written) return { metadata: metadataOf(stored), created: !current };
    }
    throw new Error(
      `the write of secret ${binding.name} lost ${WRITE_ATTEMPTS} races to other writes; try again`,
    );
  }

  /** The secret's metadata, or undefined. */
  async get(tenantId: string, name: string): Promise<SecretMetadata | undefined> {
    const stored = await this.read(tenantId, name);
    return stored && metadataOf(stored);
  }

  /** Every secret's metadata, by name. Never a value. */
  async list(tenantId: string): Promise<SecretMetadata[]> {
    const names = await this.names(tenantId);
    const found = await mapWithLimit(names, READ_CONCURRENCY, (name) => this.read(tenantId, name));
    return found.filter((stored): stored is StoredSecret => stored !== undefined).map(metadataOf);
  }

  /** Removes the secret: false when the tenant has none by that name. */
  async delete(tenantId: string, name: string): Promise<boolean> {
    if (!(await this.read(tenantId, name))) return false;
    await this.objects.remove(this.secretKey(tenantId, name));
    return true;
  }

  /**
   * The named secrets with their values, read now; names the tenant does not have (or that are
   * not secret names at all) are listed in `missing`. Throws when the store or the key fails.
   */
  async resolve(tenantId: string, names: readonly string[]): Promise<SecretsForCall> {
    const unique = [...new Set(names)];
    const stored = await mapWithLimit(unique, READ_CONCURRENCY, (name) =>
      SECRET_NAME.test(name) ? this.read(tenantId, name) : Promise.resolve(undefined),
    );
    const secrets: ResolvedSecret[] = [];
    const missing: string[] = [];
    const dataKey = stored.some(Boolean) ? await this.dataKey(tenantId) : undefined;
    unique.forEach((name, index) => {
      const found = stored[index];
      if (!found || !dataKey) {
        missing.push(name);
        return;
      }
      const value = open(
        dataKey,
        Buffer.from(found.ciphertext, "base64"),
        valueContext(tenantId, found.name, found.version),
      ).toString("utf8");
      secrets.push({ name: found.name, hosts: found.hosts, in: found.in, value });
    });
    return { secrets, missing };
  }

  /**
   * Encrypts another value the tenant owns (a webhook endpoint's signing secret) under the
   * tenant's data key, binding `context` (what the value belongs to): the one mechanism for a
   * tenant's secrets at rest. Returns base64 of nonce ‖ ciphertext ‖ tag.
   */
  async sealOwned(tenantId: string, context: string, value: string): Promise<string> {
    const dataKey = await this.dataKey(tenantId);
    return seal(dataKey, Buffer.from(value, "utf8"), ownedContext(tenantId, context)).toString("base64");
  }

  /** The value `sealOwned` sealed under the same tenant and context; throws when either differs. */
  async openOwned(tenantId: string, context: string, sealed: string): Promise<string> {
    const dataKey = await this.dataKey(tenantId);
    return open(dataKey, Buffer.from(sealed, "base64"), ownedContext(tenantId, context)).toString("utf8");
  }

  /** The names of the tenant's secrets (one LIST), sorted. */
  async names(tenantId: string): Promise<string[]> {
    const folder = this.folder(tenantId);
    const names: string[] = [];
    for await (const object of listObjects(this.s3, { Bucket: this.location.bucket, Prefix: folder })) {
      const name = SECRET_OBJECT.exec(object.Key?.slice(folder.length) ?? "")?.[1];
      if (name) names.push(name);
    }
    return names.sort();
  }

  private async read(tenantId: string, name: string): Promise<StoredSecret | undefined> {
    const stored = await this.objects.read(this.secretKey(tenantId, name), StoredSecretSchema);
    if (stored && stored.name !== name)
      throw new VaultIntegrityError(`the stored secret ${name} names another secret`);
    return stored;
  }

  /** The tenant's data key, unwrapped (cached briefly); made and stored at its first use. */
  private dataKey(tenantId: string): Promise<Buffer> {
    return this.dataKeys.getOrLoad(tenantId, async () => {
      const key = this.dataKeyKey(tenantId);
      const read = () => this.objects.read(key, StoredDataKeySchema);
      let stored = await read();
      if (!stored) {
        const made = await this.wrapper.newDataKey(tenantId);
        const record = {
          format: FORMAT,
          wrapper: this.wrapper.kind,
          wrapped: made.wrapped,
          createdAt: new Date(this.now()).toISOString(),
        } as const;
        if (await this.objects.createIfAbsent(key, record)) return made.plaintext;
        made.plaintext.fill(0);
        // Another first `set` stored its key first: that one is the tenant's.
        stored = await readAfterConflict(read);
        if (!stored) throw new Error(`the data key of tenant ${tenantId} was created but cannot be read`);
      }
      if (stored.wrapper !== this.wrapper.kind)
        throw new VaultIntegrityError(
          `the data key of tenant ${tenantId} is wrapped by ${stored.wrapper}, but this deployment's vault uses ${this.wrapper.kind}`,
        );
      return this.wrapper.unwrap(tenantId, stored.wrapped);
    });
  }
}

/** A new secret would pass MAX_TENANT_SECRETS. */
export class TooManySecretsError extends Error {
  constructor() {
    super(`a tenant holds at most ${MAX_TENANT_SECRETS} secrets; delete one first`);
    this.name = "TooManySecretsError";
  }
}

function metadataOf(stored: StoredSecret): SecretMetadata {
  return {
    name: stored.name,
    hosts: stored.hosts,
    in: stored.in,
    createdAt: stored.createdAt,
    updatedAt: stored.updatedAt,
    version: stored.version,
  };
}

/** The vault over `s3` the settings ask for (reads a key file now), or undefined when none is set. */
export function createVault(
  settings: VaultSettings | undefined,
  s3: S3Client,
  location: { bucket: string; prefix: string },
): SecretStore | undefined {
  return settings ? new SecretStore(s3, location, keyWrapperOf(settings)) : undefined;
}
