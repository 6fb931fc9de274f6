/**
 * Bearer API keys mapped to tenants. Keys are configured only as sha256 digests; a presented key
 * is hashed and compared against every configured digest in constant time.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { ApiKeys } from "./config";
import { ProblemError } from "./problems";

/** Longest Authorization header considered; anything longer is refused without hashing. */
const MAX_AUTHORIZATION_LENGTH = 4096;
const BEARER = /^Bearer ([\x21-\x7e]+)$/;

export function sha256Hex(text: string | Uint8Array): string {
  return createHash("sha256").update(text).digest("hex");
}

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
  /** Set for a launched runner's token: the one session it serves. */
  runnerSession?: string;
}

/** Sets `tenantId` from `Authorization: Bearer <key>`, or answers 401. */
export function bearerAuth(apiKeys: ApiKeys): MiddlewareHandler<{ Variables: TenantVariables }> {
  return async (c, next) => {
    const header = c.req.header("authorization") ?? "";
    const match = header.length <= MAX_AUTHORIZATION_LENGTH ? BEARER.exec(header) : null;
    const tenantId = match?.[1] ? tenantOfKey(apiKeys, match[1]) : undefined;
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
