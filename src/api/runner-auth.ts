/**
 * Runner tokens (`keel runner`): a bearer token that belongs to one tenant and one environment
 * (src/environments/store.ts) and, for a launched runner's, one session. Looked up by its sha256 digest on every request, so a revoked token
 * is refused from the next request on.
 */
import type { MiddlewareHandler } from "hono";
import type { EnvironmentStore } from "../environments/store";
import type { TenantVariables } from "./auth";
import { ProblemError } from "./problems";

const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;

/** Sets `tenantId` and `runnerEnvironment` from `Authorization: Bearer <runner token>`, or answers 401. */
export function runnerAuth(
  environments: EnvironmentStore,
): MiddlewareHandler<{ Variables: TenantVariables }> {
  return async (c, next) => {
    const token = BEARER.exec(c.req.header("authorization") ?? "")?.[1];
    const owner = token === undefined ? undefined : await environments.tokenOwner(token);
    if (!owner) {
      throw new ProblemError(
        "unauthorized",
        "Send Authorization: Bearer <runner token> (keel env token NAME).",
        {},
        { "www-authenticate": 'Bearer realm="keel-runner"' },
      );
    }
    c.set("tenantId", owner.tenantId);
    c.set("runnerEnvironment", owner.environment);
    if (owner.sessionId !== undefined) c.set("runnerSession", owner.sessionId);
    await next();
  };
}
