/**
 * Bearer API keys mapped to tenants. Keys are configured only as sha256 digests; a presented key
 * is hashed and compared against every configured digest in constant time, then, when no static
 * key matches, looked up by digest in the tenant store (keys issued through the admin API).
 */
import { timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { sha256Hex } from "../store/digest";
import type { KeyResolver } from "../tenants/key-cache";
import type { ApiKeys } from "./config";
import { ProblemError } from "./problems";

/** Longest Authorization header considered; anything longer is refused without hashing. */
const MAX_AUTHORIZATION_LENGTH = 4096;
const BEARER = /^Bearer ([\x21-\x7e]+)$/;

/** Tenant of a presented key, or undefined. Compares every digest, so timing reveals nothing. */
export function tenantOfKey(apiKeys: ApiKeys, key: string): string | undefined {
  const presented = Buffer.from(sha256Hex(key), "hex");
  let tenant: string | undefined;
  for (const [digest, tenantId] of Object.entries(apiKeys)) {
    if (timingSafeEqual(presented, Buffer.from(digest, "hex")) && tenant === undefined) tenant = tenantId;
  }
  return tenant;
}

export interface TenantVariables {
  tenantId: string;
  /** Set for a request authenticated with a runner token: the one environment it serves. */
  runnerEnvironment?: string;
  /**
   * Whether the credential of this request still authenticates its tenant (a stored key can be
   * revoked while a long request, an event stream, is open). Absent: it cannot be revoked.
   */
  stillAuthorized?: () => Promise<boolean>;
  /** Set for a launched runner's token: the one session it serves. */
  runnerSession?: string;
  /** The runner token's id (the Temporal UI names it as the worker of the calls it took). */
  runnerTokenId?: string;
  /**
   * Whether the runner token still stands: on a call's heartbeat and result, looked up while the
   * handler reads the call, and awaited before it changes anything (runner-auth.ts).
   */
  runnerAuthorized?: Promise<boolean>;
}

/** The bearer key of a request, or undefined (absent, malformed or too long). */
export function bearerKey(header: string | undefined): string | undefined {
  const value = header ?? "";
  return value.length <= MAX_AUTHORIZATION_LENGTH ? BEARER.exec(value)?.[1] : undefined;
}

/**
 * Sets `tenantId` from `Authorization: Bearer <key>` (a static key, else one in the tenant store
 * `stored` resolves), or answers 401.
 */
export function bearerAuth(
  apiKeys: ApiKeys,
  stored?: KeyResolver,
): MiddlewareHandler<{ Variables: TenantVariables }> {
  return async (c, next) => {
    const key = bearerKey(c.req.header("authorization"));
    let tenantId = key !== undefined ? tenantOfKey(apiKeys, key) : undefined;
    if (key !== undefined && tenantId === undefined && stored) {
      const digest = sha256Hex(key);
      const storedTenant = await stored.tenantOf(digest);
      if (storedTenant !== undefined) {
        tenantId = storedTenant;
        c.set("stillAuthorized", async () => (await stored.tenantOf(digest)) === storedTenant);
      }
    }
    if (!tenantId) {
      throw new ProblemError(
        "unauthorized",
        "Send Authorization: Bearer <API key>.",
        {},
        {
          "www-authenticate": 'Bearer realm="keel"',
        },
      );
    }
    c.set("tenantId", tenantId);
    await next();
  };
}

/**
 * In a deployment declared for one tenant (KEEL_SINGLE_TENANT: its workers run tools without the
 * sandbox), answers 403 tenant-not-served to every other tenant, before anything is read or
 * started for it. Runs after `bearerAuth`.
 */
export function singleTenantOnly(tenantId: string): MiddlewareHandler<{ Variables: TenantVariables }> {
  return async (c, next) => {
    if (c.get("tenantId") !== tenantId) {
      throw new ProblemError(
        "tenant-not-served",
        "This deployment runs agents for one tenant only; use your own deployment.",
      );
    }
    await next();
  };
}

/** How often an open event stream checks that its credential still authenticates. */
export const CREDENTIAL_RECHECK_MS = 1_000;

/**
 * A signal aborted once `stillAuthorized` answers false (checked every CREDENTIAL_RECHECK_MS),
 * for long requests whose key may be revoked while they are open; never aborted without a check.
 * `dispose` stops the checks.
 */
export function whileAuthorized(stillAuthorized: (() => Promise<boolean>) | undefined): {
  signal: AbortSignal;
  dispose: () => void;
} {
  const controller = new AbortController();
  if (!stillAuthorized) return { signal: controller.signal, dispose: () => undefined };
  const timer = setInterval(() => {
    stillAuthorized().then(
      (ok) => {
        if (!ok) controller.abort();
      },
      // A failed check (storage down) keeps the stream: the next check decides.
      () => undefined,
    );
  }, CREDENTIAL_RECHECK_MS);
  timer.unref();
  return { signal: controller.signal, dispose: () => clearInterval(timer) };
}
