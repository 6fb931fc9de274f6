/**
 * The operator's key for the admin API (`/v1/admin/...`): configured as sha256 digests
 * (KEEL_ADMIN_KEY_SHA256), separate from every tenant key. A tenant key, static or stored, never
 * opens an admin route, and an operator key opens no tenant route (it maps to no tenant).
 */
import { timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { sha256Hex } from "../store/digest";
import { bearerKey, type TenantVariables } from "./auth";
import { ProblemError } from "./problems";

/** Answers 401 unless the request carries an operator key; compares every digest (no timing signal). */
export function adminAuth(digests: readonly string[]): MiddlewareHandler<{ Variables: TenantVariables }> {
  const configured = digests.map((digest) => Buffer.from(digest, "hex"));
  return async (c, next) => {
    const key = bearerKey(c.req.header("authorization"));
    const presented = Buffer.from(sha256Hex(key ?? ""), "hex");
    let admitted = false;
    for (const digest of configured) if (timingSafeEqual(presented, digest)) admitted = true;
    if (key === undefined || !admitted)
      throw new ProblemError(
        "unauthorized",
        "The admin API takes the operator's key (KEEL_ADMIN_KEY_SHA256), never a tenant's.",
        {},
        { "www-authenticate": 'Bearer realm="keel-admin"' },
      );
    await next();
  };
}
