/**
 * `Idempotency-Key` for POSTs. The first request with a key claims an S3 record (conditional
 * create), runs, and stores its response (status + body); a retry with the same key gets the
 * stored response back and runs nothing. The same key with a different request is refused (422);
 * while the first request is still running a retry gets 409 and `Retry-After`.
 *
 * Record key: `{prefix}idempotency/{tenantId}/{sha256(key + method + path)}.json`.
 * Responses with status >= 500 are not kept (the record is removed) so a retry may try again.
 * A response is never turned into an error because its record could not be saved: the request
 * has run. Messages are additionally delivered under an update id derived from the key
 * (`deliveryUpdateId`), so a request that runs again after a lost record lands on the same
 * Temporal update and is not delivered twice: for them the record is an optimization, and a
 * stale (after seconds) or unreadable claim lets a retry through. Every other POST relies on the
 * record alone (see `isTemporalDeduplicated`).
 */
import type { MiddlewareHandler } from "hono";
import { z } from "zod";
import { sha256Hex } from "../store/digest";
import type { JsonObjects } from "../store/json-objects";
import type { TenantVariables } from "./auth";
import { ProblemError } from "./problems";

export const IDEMPOTENCY_HEADER = "idempotency-key";
export const REPLAYED_HEADER = "idempotent-replayed";
/** Printable ASCII, at most this long. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/**
 * 1-255 printable ASCII characters, no space at either end (HTTP drops those, so such a key could
 * never arrive as sent). The OpenAPI document declares this very pattern.
 */
export const IDEMPOTENCY_KEY_PATTERN = `^[!-~]([ -~]{0,${MAX_IDEMPOTENCY_KEY_LENGTH - 2}}[!-~])?$`;
const KEY_PATTERN = new RegExp(IDEMPOTENCY_KEY_PATTERN);
/**
 * A pending claim older than this belongs to a request that died (or whose final write was lost);
 * a retry may take it over. Routes that rely on the record alone wait long, so a slow first
 * request (an LLM summary) is not run a second time beside itself.
 */
export const STALE_CLAIM_MS = 5 * 60_000;
/**
 * The lease of a claim on a route Temporal deduplicates (messages): seconds, since a retry that
 * runs again lands on the first delivery's update and is answered with its result.
 */
export const DEDUPLICATED_CLAIM_LEASE_MS = 10_000;
/**
 * Routes whose effect Temporal itself deduplicates by an id derived from tenant + key
 * (`deliveryUpdateId`): the record only saves the round trip, so a stale or unreadable claim lets
 * a retry through instead of refusing it. Every other POST relies on the record alone.
 */
const TEMPORAL_DEDUPLICATED_PATH = /^\/v1\/sessions\/[^/]+\/messages$/;

function isTemporalDeduplicated(method: string, path: string): boolean {
  return method === "POST" && TEMPORAL_DEDUPLICATED_PATH.test(path);
}
/** Claim attempts when the record vanishes or changes between a failed create and the takeover. */
const CLAIM_ATTEMPTS = 3;

const IdempotencyRecordSchema = z.discriminatedUnion("state", [
  z.object({ state: z.literal("pending"), requestHash: z.string(), startedAt: z.number() }),
  z.object({
    state: z.literal("done"),
    requestHash: z.string(),
    status: z.number().int(),
    contentType: z.string(),
    body: z.string(),
    completedAt: z.number(),
  }),
]);
type IdempotencyRecord = z.infer<typeof IdempotencyRecordSchema>;
type DoneRecord = Extract<IdempotencyRecord, { state: "done" }>;

export function idempotencyRecordKey(
  prefix: string,
  tenantId: string,
  idempotencyKey: string,
  method: string,
  path: string,
): string {
  return `${prefix}idempotency/${tenantId}/${sha256Hex(idempotencyKey + method + path)}.json`;
}

/**
 * Id of a message delivered under `idempotencyKey`: the same for every retry, so the run (which
 * takes a delivery id once: Temporal runs an update id once per workflow run, and the run answers
 * a repeated signal's id from memory) answers a retry with the first delivery's answer.
 */
export function deliveryId(tenantId: string, idempotencyKey: string): string {
  return `keel-deliver-${sha256Hex(`${tenantId}\n${idempotencyKey}`)}`;
}

function validateKey(idempotencyKey: string): void {
  if (!KEY_PATTERN.test(idempotencyKey)) {
    throw new ProblemError(
      "invalid-request",
      `Idempotency-Key must be 1..${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters, no space at either end`,
    );
  }
}

const inUse = (detail: string) =>
  new ProblemError("idempotency-key-in-use", detail, {}, { "retry-after": "1" });

/** How a request stands towards its key's record after claiming it. */
type Claim =
  /** The request holds the record: it runs and stores its answer. */
  | { kind: "claimed" }
  /** Answered before: the stored answer is replayed. */
  | { kind: "answered"; record: DoneRecord }
  /** The record could not be read or written; the route is deduplicated by Temporal, so it runs without one. */
  | { kind: "unrecorded"; error: unknown };

/**
 * Claims `key` for a request with `requestHash`. Throws the matching problem when the key is held
 * by another request (a pending claim younger than `leaseMs`) or was used with another body.
 */
async function claim(
  objects: JsonObjects,
  key: string,
  requestHash: string,
  now: () => number,
  leaseMs: number,
): Promise<Claim> {
  const pending: IdempotencyRecord = { state: "pending", requestHash, startedAt: now() };
  for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
    if (await objects.createIfAbsent(key, pending)) return { kind: "claimed" };
    const read = await objects.readVersioned(key, IdempotencyRecordSchema);
    if (read === undefined) continue;
    const existing = read.value;
    if (existing.requestHash !== requestHash) {
      throw new ProblemError(
        "idempotency-key-reused",
        "This Idempotency-Key was first used with a different request body.",
      );
    }
    if (existing.state === "done") return { kind: "answered", record: existing };
    if (now() - existing.startedAt < leaseMs) {
      throw inUse("The first request with this Idempotency-Key has not finished yet.");
    }
    // The request that claimed the key died, or its answer was never recorded: take its claim
    // over — only the version read, so of two retries taking over one stale claim, one wins and
    // the other reads the winner's fresh claim on its next attempt.
    if (await objects.replaceIfMatch(key, pending, read.etag)) return { kind: "claimed" };
  }
  throw inUse("The Idempotency-Key record is changing; retry.");
}

/**
 * `claim` for a route Temporal deduplicates: a record that cannot be read or written (S3 down, a
 * malformed object) does not stop the request, which runs without one.
 */
async function claimDeduplicated(
  objects: JsonObjects,
  key: string,
  requestHash: string,
  now: () => number,
): Promise<Claim> {
  try {
    return await claim(objects, key, requestHash, now, DEDUPLICATED_CLAIM_LEASE_MS);
  } catch (error) {
    if (error instanceof ProblemError) throw error;
    return { kind: "unrecorded", error };
  }
}

/**
 * Middleware for POST routes behind `bearerAuth`. Requests without the header pass through
 * unchanged. Reads the body (Hono caches it, so validators downstream see the same bytes).
 */
export function idempotency(
  objects: JsonObjects,
  now: () => number = Date.now,
  log: (record: Record<string, unknown>) => void = () => undefined,
): MiddlewareHandler<{ Variables: TenantVariables }> {
  return async (c, next) => {
    const idempotencyKey = c.req.header(IDEMPOTENCY_HEADER);
    if (c.req.method !== "POST" || idempotencyKey === undefined) return next();
    validateKey(idempotencyKey);
    const body = new Uint8Array(await c.req.arrayBuffer());
    const path = c.req.path;
    const requestHash = sha256Hex(Buffer.concat([Buffer.from(`${c.req.method} ${path}\n`), body]));
    const key = idempotencyRecordKey(objects.prefix, c.get("tenantId"), idempotencyKey, c.req.method, path);

    const claimed = isTemporalDeduplicated(c.req.method, path)
      ? await claimDeduplicated(objects, key, requestHash, now)
      : await claim(objects, key, requestHash, now, STALE_CLAIM_MS);
    if (claimed.kind === "answered") {
      const { record } = claimed;
      return new Response(record.body, {
        status: record.status,
        headers: { "content-type": record.contentType, [REPLAYED_HEADER]: "true" },
      });
    }
    if (claimed.kind === "unrecorded") {
      log({
        level: "warn",
        msg: "idempotency record unavailable; Temporal deduplicates the delivery",
        method: c.req.method,
        path,
        error: String(claimed.error),
      });
      return next();
    }
    await next();
    const response = c.res;
    try {
      if (response.status >= 500) {
        await objects.remove(key);
        return;
      }
      await objects.overwrite(key, {
        state: "done",
        requestHash,
        status: response.status,
        contentType: response.headers.get("content-type") ?? "application/json",
        body: await response.clone().text(),
        completedAt: now(),
      } satisfies IdempotencyRecord);
    } catch (error) {
      // The request ran and its answer stands. The claim stays pending: retries get 409 until it
      // is stale (seconds for messages, which then meet their first delivery's Temporal update;
      // STALE_CLAIM_MS for the routes that rely on the record alone), then run again.
      log({
        level: "warn",
        msg: "idempotency record not saved",
        method: c.req.method,
        path,
        status: response.status,
        error: String(error),
      });
    }
  };
}
