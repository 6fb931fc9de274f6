/**
 * Environments, runner tokens and the calls runners hold, as small JSON objects in S3 (the API
 * stays stateless: any API process, or Lambda, serves any request). The calls themselves wait on
 * Temporal task queues (task-queues.ts); a call's object here is written when a runner claims it.
 *
 * ```
 * {prefix}tenants/{t}/environments/{name}/environment.json     the environment
 * {prefix}tenants/{t}/environments/{name}/tokens/{tokenId}.json a token's index entry (its digest)
 * {prefix}tenants/{t}/environments/{name}/calls/{callId}.json   a call a runner holds: its claim and task token
 * {prefix}tenants/{t}/environments/{name}/workspaces/{session}.tar.gz  a session's workspace, stored by its runner
 * {prefix}runner-tokens/{sha256 of the token}.json              token → tenant + environment
 * ```
 *
 * Tokens are random secrets shown once; only their sha256 digest is stored. Revoking deletes both
 * objects: the token takes no call from its next claim on (its heartbeats and results: see
 * `recentOwner` and api/runner-auth.ts).
 */
import { randomBytes } from "node:crypto";
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { z } from "zod";
import { BoundedCache } from "../core/bounded-cache";
import { ID_PATTERN } from "../core/ids";
import type { McpServerSettings } from "../mcp/types";
import { ConditionalObjects } from "../store/conditional-objects";
import { sha256Hex } from "../store/digest";
import { JsonObjects } from "../store/json-objects";
import { isNotFound, listKeys, s3HttpStatus } from "../store/s3-requests";

/** Where a session's tools run. `worker` is the built-in default and cannot be created. */
const WORKER_ENVIRONMENT = "worker";
/** `runner`: `keel runner` processes the tenant starts; `launched`: Keel starts one per session (launchers/). */
export const ENVIRONMENT_KINDS = ["runner", "launched"] as const;
/** Environment names: like session ids, at most 63 characters, and never `worker`. */
export const ENVIRONMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

const EnvironmentSchema = z.object({
  name: z.string(),
  kind: z.enum(ENVIRONMENT_KINDS),
  createdAt: z.string(),
  description: z.string().optional(),
});
export type Environment = z.infer<typeof EnvironmentSchema>;

/**
 * Which version of a session's stored workspace a runner's copy is: the archive object's ETag. A
 * copy is the current one only while its generation is the stored one (docs/environments.md,
 * "Workspaces on runners"), as a worker's copy is only while its holder epoch is.
 */
export type WorkspaceGeneration = string;

/** A session's workspace as its runner last stored it. */
export interface StoredWorkspace {
  archive: Uint8Array;
  generation: WorkspaceGeneration;
  storedAt: Date;
}

const TokenRecordSchema = z.object({
  tenantId: z.string(),
  environment: z.string(),
  tokenId: z.string(),
  createdAt: z.string(),
  /** A launched runner's token serves this one session only. */
  sessionId: z.string().optional(),
});
export type RunnerTokenRecord = z.infer<typeof TokenRecordSchema>;

const TokenIndexSchema = z.object({ tokenId: z.string(), digest: z.string(), createdAt: z.string() });

const SlotSchema = z.object({
  seq: z.number().int().nonnegative(),
  id: z.string(),
  parentId: z.string().nullable(),
  timestamp: z.string(),
});

/** What every call a runner holds carries: who it is for, the attempt it answers, its claim. */
const callCommon = {
  callId: z.string(),
  tenantId: z.string(),
  sessionId: z.string(),
  environment: z.string(),
  network: z.unknown().optional(),
  /** Temporal's attempt of the call's activity, and that attempt's task token (base64). */
  attempt: z.number().int().positive(),
  taskToken: z.string(),
  /** The claim: a random id only the claiming runner learns. (Records written before also held its time, never read; they parse the same.) */
  claim: z.object({ id: z.string() }),
};

/** MCP server settings as the worker wrote them (validated by the API when the run started). */
const McpServerSettingsSchema = z.custom<McpServerSettings>(
  (value) =>
    typeof value === "object" && value !== null && typeof (value as { name?: unknown }).name === "string",
);

/** A tool call a runner holds. */
const RunnerToolCallSchema = z.object({
  ...callCommon,
  kind: z.literal("tool").optional(),
  slot: SlotSchema,
  /** The call's id and tool; with an approved edit, the model's own arguments (the result records both). */
  toolCall: z.object({
    id: z.string(),
    name: z.string(),
    arguments: z.record(z.string(), z.unknown()).optional(),
  }),
  /** The arguments a person approved instead of the model's; recorded in the result. */
  argumentsOverride: z.record(z.string(), z.unknown()).optional(),
  /** An MCP tool: the server the runner calls it on, its name there, and its replay class. */
  mcp: z
    .object({
      server: McpServerSettingsSchema,
      tool: z.string(),
      replay: z.enum(["safe", "idempotent-with-check", "unsafe"]),
    })
    .optional(),
});
export type RunnerToolCall = z.infer<typeof RunnerToolCallSchema>;

/** A run's MCP servers to list on a runner (its stdio servers run there): the listing is the activity's result. */
const McpListingCallSchema = z.object({
  ...callCommon,
  kind: z.literal("mcp-list"),
  servers: z.array(McpServerSettingsSchema),
});
export type McpListingCall = z.infer<typeof McpListingCallSchema>;

const RunnerCallSchema = z.union([McpListingCallSchema, RunnerToolCallSchema]);
export type RunnerCall = z.infer<typeof RunnerCallSchema>;

/** Call ids: a session id, `.`, then a result slot's sequence number or an MCP listing's key. */
export const RUNNER_CALL_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}\.([0-9]{1,12}|mcp-list-[0-9a-f]{12})$/;

/** The id of the call filling result slot `seq` of session `sessionId` (`.` is in no session id). */
export function runnerCallId(sessionId: string, seq: number): string {
  return `${sessionId}.${seq}`;
}

/**
 * The id of an MCP listing for session `sessionId`; `key` (12 hex digits) tells one listing of the
 * session from another and stays the same across the listing activity's attempts.
 */
export function mcpListingCallId(sessionId: string, key: string): string {
  return `${sessionId}.mcp-list-${key}`;
}

/** A runner token: `keel_rt_`, its id, `_`, 32 random bytes. */
const TOKEN_PATTERN = /^keel_rt_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/;

/** Tokens this process remembers having found standing, and having revoked (each, at most). */
const STANDING_TOKENS_MAX = 1_000;

export class EnvironmentStore {
  private readonly objects: JsonObjects;
  private readonly conditional: ConditionalObjects;
  /** Tokens found standing, by digest, and when (`recentOwner`'s `withinMs`). */
  private readonly standing = new BoundedCache<string, { owner: RunnerTokenRecord; at: number }>({
    capacity: STANDING_TOKENS_MAX,
  });
  /** Tokens this process revoked, by digest: a lookup that was under way then does not bring one back. */
  private readonly revoked = new BoundedCache<string, true>({ capacity: STANDING_TOKENS_MAX });

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
  ) {
    this.objects = new JsonObjects(s3, bucket, prefix);
    this.conditional = new ConditionalObjects(s3, bucket);
  }

  private folder(tenantId: string, name?: string): string {
    if (!ID_PATTERN.test(tenantId)) throw new Error(`invalid tenant id ${JSON.stringify(tenantId)}`);
    const base = `${this.prefix}tenants/${tenantId}/environments/`;
    if (name === undefined) return base;
    if (!isEnvironmentName(name)) throw new Error(`invalid environment name ${JSON.stringify(name)}`);
    return `${base}${name}/`;
  }

  /** Creates the environment: false when one of that name exists. */
  create(tenantId: string, environment: Environment): Promise<boolean> {
    return this.objects.createIfAbsent(
      `${this.folder(tenantId, environment.name)}environment.json`,
      environment,
    );
  }

  get(tenantId: string, name: string): Promise<Environment | undefined> {
    return this.objects.read(`${this.folder(tenantId, name)}environment.json`, EnvironmentSchema);
  }

  async list(tenantId: string): Promise<Environment[]> {
    const names = (await this.keys(this.folder(tenantId), "/"))
      .map((prefix) => prefix.slice(this.folder(tenantId).length).replace(/\/$/, ""))
      .filter(isEnvironmentName);
    const found = await Promise.all(names.map((name) => this.get(tenantId, name)));
    return found.filter((environment) => environment !== undefined);
  }

  /** Deletes the environment, its tokens and its waiting calls. */
  async delete(tenantId: string, name: string): Promise<boolean> {
    const folder = this.folder(tenantId, name);
    if (!(await this.get(tenantId, name))) return false;
    for (const token of await this.tokens(tenantId, name)) await this.revoke(tenantId, name, token.tokenId);
    for (const key of await this.keys(folder)) await this.objects.remove(key);
    return true;
  }

  /**
   * A new token for the environment: the secret (returned once, never stored) and its id. With
   * `sessionId` (a launched runner's) it takes that session's calls and snapshot only.
   */
  async issueToken(
    tenantId: string,
    environment: string,
    options: { sessionId?: string } = {},
  ): Promise<{ token: string; tokenId: string }> {
    if (options.sessionId !== undefined && !ID_PATTERN.test(options.sessionId))
      throw new Error(`invalid session id ${JSON.stringify(options.sessionId)}`);
    const tokenId = randomBytes(6).toString("hex");
    const token = `keel_rt_${tokenId}_${randomBytes(32).toString("base64url")}`;
    const digest = sha256Hex(token);
    const createdAt = new Date().toISOString();
    await this.objects.overwrite(`${this.folder(tenantId, environment)}tokens/${tokenId}.json`, {
      tokenId,
      digest,
      createdAt,
    });
    await this.objects.overwrite(this.tokenKey(digest), {
      tenantId,
      environment,
      tokenId,
      createdAt,
      ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
    });
    return { token, tokenId };
  }

  async tokens(tenantId: string, environment: string): Promise<{ tokenId: string; createdAt: string }[]> {
    const folder = `${this.folder(tenantId, environment)}tokens/`;
    const records = await Promise.all(
      (await this.keys(folder)).map((key) => this.objects.read(key, TokenIndexSchema)),
    );
    return records.flatMap((record) =>
      record ? [{ tokenId: record.tokenId, createdAt: record.createdAt }] : [],
    );
  }

  /** Revokes a token: false when the environment has no token of that id. */
  async revoke(tenantId: string, environment: string, tokenId: string): Promise<boolean> {
    if (!/^[0-9a-f]{12}$/.test(tokenId)) return false;
    const indexKey = `${this.folder(tenantId, environment)}tokens/${tokenId}.json`;
    const index = await this.objects.read(indexKey, TokenIndexSchema);
    if (!index) return false;
    this.forget(index.digest);
    await this.objects.remove(this.tokenKey(index.digest));
    await this.objects.remove(indexKey);
    return true;
  }

  /** The tenant and environment a presented token belongs to, or undefined (unknown or revoked). */
  async tokenOwner(token: string): Promise<RunnerTokenRecord | undefined> {
    if (!TOKEN_PATTERN.test(token)) return undefined;
    const digest = sha256Hex(token);
    const owner = await this.objects.read(this.tokenKey(digest), TokenRecordSchema);
    // Revoked through this process while the read was under way: it read the token before it went.
    if (this.revoked.has(digest)) return undefined;
    if (owner) this.standing.set(digest, { owner, at: Date.now() });
    else this.standing.delete(digest);
    return owner;
  }

  /** Forgets a token this process revoked, for good (tokens are never restored). */
  private forget(digest: string): void {
    this.standing.delete(digest);
    this.revoked.set(digest, true);
  }

  /**
   * Who a token belongs to, when this process's last `tokenOwner` found it standing (within
   * `withinMs`, when given): no lookup. A revocation through this process forgets the token at once.
   */
  recentOwner(token: string, withinMs?: number): RunnerTokenRecord | undefined {
    if (!TOKEN_PATTERN.test(token)) return undefined;
    const seen = this.standing.get(sha256Hex(token));
    return seen && (withinMs === undefined || Date.now() - seen.at < withinMs) ? seen.owner : undefined;
  }

  private tokenKey(digest: string): string {
    return `${this.prefix}runner-tokens/${digest}.json`;
  }

  private callKey(tenantId: string, environment: string, callId: string): string {
    if (!RUNNER_CALL_ID.test(callId)) throw new Error(`invalid call id ${JSON.stringify(callId)}`);
    return `${this.folder(tenantId, environment)}calls/${callId}.json`;
  }

  /** Writes (or replaces, for a new attempt) a call a runner claimed: its heartbeats and result read it. */
  async putCall(call: RunnerCall): Promise<void> {
    await this.objects.overwrite(this.callKey(call.tenantId, call.environment, call.callId), call);
  }

  readCall(tenantId: string, environment: string, callId: string): Promise<RunnerCall | undefined> {
    return this.objects.read(this.callKey(tenantId, environment, callId), RunnerCallSchema);
  }

  removeCall(tenantId: string, environment: string, callId: string): Promise<void> {
    return this.objects.remove(this.callKey(tenantId, environment, callId));
  }

  /** Ids of the calls runners of the environment hold, oldest key first. */
  async callIds(tenantId: string, environment: string): Promise<string[]> {
    const folder = `${this.folder(tenantId, environment)}calls/`;
    return (await this.keys(folder)).map((key) => key.slice(folder.length).replace(/\.json$/, ""));
  }

  /** Where a runner stores the workspace of `sessionId` (a session archive: workspace-archive.ts). */
  workspaceKey(tenantId: string, environment: string, sessionId: string): string {
    if (!ID_PATTERN.test(sessionId)) throw new Error(`invalid session id ${JSON.stringify(sessionId)}`);
    return `${this.folder(tenantId, environment)}workspaces/${sessionId}.tar.gz`;
  }

  /**
   * Stores a session's workspace archive if the stored one is still the generation `expected`
   * (`absent`: none; `any`: a runner of an earlier release sends none). Resolves to the new
   * generation, or `changed` when another runner stored it since (the caller's copy is stale).
   */
  async putWorkspace(
    tenantId: string,
    environment: string,
    sessionId: string,
    body: Uint8Array,
    expected: WorkspaceGeneration | "absent" | "any",
  ): Promise<{ generation: WorkspaceGeneration } | "changed"> {
    const key = this.workspaceKey(tenantId, environment, sessionId);
    const generation = await this.conditional.writeIfVersion(key, body, "application/gzip", expected);
    return generation === undefined ? "changed" : { generation };
  }

  /**
   * The session's workspace archive and its generation; `current` when it is still the
   * generation `held` (nothing to download); undefined when its runner stored none.
   */
  async getWorkspace(
    tenantId: string,
    environment: string,
    sessionId: string,
    held?: WorkspaceGeneration,
  ): Promise<StoredWorkspace | "current" | undefined> {
    try {
      const object = await this.s3.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.workspaceKey(tenantId, environment, sessionId),
          ...(held !== undefined ? { IfNoneMatch: held } : {}),
        }),
      );
      if (!object.ETag) throw new Error("a stored workspace was read without an ETag");
      const archive = object.Body ? await object.Body.transformToByteArray() : new Uint8Array();
      // A server that ignores If-None-Match answers the same version whole.
      if (held !== undefined && object.ETag === held) return "current";
      return { archive, generation: object.ETag, storedAt: object.LastModified ?? new Date(0) };
    } catch (error) {
      if (s3HttpStatus(error) === 304) return "current";
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Keys under `folder` (with a delimiter: the common prefixes instead). */
  private keys(folder: string, delimiter?: string): Promise<string[]> {
    return listKeys(this.s3, this.bucket, folder, delimiter);
  }
}

export function isEnvironmentName(name: string): boolean {
  return ENVIRONMENT_NAME.test(name) && name !== WORKER_ENVIRONMENT;
}
