/**
 * MCP tool listings stored once, by digest, so a run's history carries a server's tools once (the
 * listing activity's result) and each `llmTurn` input only their digests:
 *
 * ```
 * {prefix}tenants/{t}/sessions/{s}/mcp-tools/{sha256 of the JSON}.json
 * ```
 * Content-addressed: a write is a conditional create (the same list twice is one object), a read
 * checks the bytes against the digest, and a read is cached in the process (objects never change;
 * the most recently used 256 listings).
 * They live in the session's folder and go with it.
 */
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { BoundedCache } from "../core/bounded-cache";
import type { McpToolEntry } from "../mcp/types";
import { ConditionalObjects } from "./conditional-objects";
import { sha256Hex } from "./digest";
import type { S3Settings } from "./s3-config";
import { type SessionRef, sessionPrefix } from "./session-keys";

const DIGEST = /^[0-9a-f]{64}$/;
/** Listings kept in memory (a few KB each). */
const CACHED_LISTINGS = 256;

export function mcpToolListingKey(prefix: string, ref: SessionRef, digest: string): string {
  if (!DIGEST.test(digest))
    throw new Error(`invalid MCP tool listing digest ${JSON.stringify(digest.slice(0, 80))}`);
  return `${sessionPrefix(prefix, ref)}mcp-tools/${digest}.json`;
}

export class McpToolListings {
  private readonly conditional: ConditionalObjects;
  /** Listings by key; concurrent reads of one share a GET. */
  private readonly cache = new BoundedCache<string, McpToolEntry[]>({ capacity: CACHED_LISTINGS });

  constructor(
    private readonly client: S3Client,
    private readonly settings: S3Settings,
  ) {
    this.conditional = new ConditionalObjects(client, settings.bucket);
  }

  /** Stores `tools` for the session (once per content) and returns their digest. */
  async put(ref: SessionRef, tools: McpToolEntry[]): Promise<string> {
    const text = JSON.stringify(tools);
    const digest = sha256Hex(text);
    const key = mcpToolListingKey(this.settings.prefix, ref, digest);
    await this.conditional.createIfAbsent(key, text, "application/json");
    this.cache.set(key, tools);
    return digest;
  }

  /** The tools stored under `digest`; throws when absent or when the bytes do not match it. */
  async get(ref: SessionRef, digest: string): Promise<McpToolEntry[]> {
    const key = mcpToolListingKey(this.settings.prefix, ref, digest);
    return this.cache.getOrLoad(key, async () => {
      const response = await this.client.send(
        new GetObjectCommand({ Bucket: this.settings.bucket, Key: key }),
      );
      const text = (await response.Body?.transformToString("utf8")) ?? "";
      if (sha256Hex(text) !== digest)
        throw new Error(`the MCP tool listing at ${key} does not match its digest`);
      return JSON.parse(text) as McpToolEntry[];
    });
  }
}
