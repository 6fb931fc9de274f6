/**
 * Runner tokens (`keel runner`): a bearer token that belongs to one tenant and one environment
 * (src/environments/store.ts) and, for a launched runner's, one session. Looked up by its sha256
 * digest, so a revoked token takes no call from its next claim on; its heartbeats and results are
 * refused within RESULT_TOKEN_STANDING_MS of the revocation (at once through the revoking process).
 */
import type { MiddlewareHandler } from "hono";
import type { EnvironmentStore } from "../environments/store";
import type { TenantVariables } from "./auth";
import { ProblemError } from "./problems";

const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;

/** Routes whose handlers await `runnerAuthorized` before they change anything (environments.ts). */
const CHECKED_BY_HANDLER = /\/calls\/[^/]+\/(heartbeat|result)$/;

/**
 * How recently a token must have been found standing for a call's heartbeat or result to take it
 * without a lookup: a runner's claims look its token up all the time (it claims its next call
 * while it runs one), and this saves the result of a short call an S3 round trip. The cost: in an
 * API process other than the one that revoked it, a token's heartbeats and results are taken for
 * up to this long after its revocation (never a claim: every claim looks the token up).
 */
export const RESULT_TOKEN_STANDING_MS = 1_000;

/**
 * Sets `tenantId`, `runnerEnvironment`, `runnerTokenId` (and a launched runner's `runnerSession`)
 * from `Authorization: Bearer <runner token>`, or answers 401. A claim (and a workspace request)
 * looks the token up before anything else. A call's heartbeat or result takes a token this
 * process found standing within RESULT_TOKEN_STANDING_MS; for one seen earlier, the lookup runs
 * while the handler reads the call (`runnerAuthorized`, awaited before anything is changed).
 */
export function runnerAuth(
  environments: EnvironmentStore,
): MiddlewareHandler<{ Variables: TenantVariables }> {
  return async (c, next) => {
    const token = BEARER.exec(c.req.header("authorization") ?? "")?.[1] ?? "";
    const handlerChecks = CHECKED_BY_HANDLER.test(c.req.path);
    let owner = handlerChecks ? environments.recentOwner(token, RESULT_TOKEN_STANDING_MS) : undefined;
    let authorized = Promise.resolve(true);
    const seenBefore = handlerChecks && !owner ? environments.recentOwner(token) : undefined;
    if (seenBefore) {
      owner = seenBefore;
      authorized = environments.tokenOwner(token).then((found) => found !== undefined);
      authorized.catch(() => undefined);
    }
    owner ??= await environments.tokenOwner(token);
    if (!owner) throw unauthorized();
    c.set("runnerAuthorized", authorized);
    c.set("tenantId", owner.tenantId);
    c.set("runnerEnvironment", owner.environment);
    c.set("runnerTokenId", owner.tokenId);
    if (owner.sessionId !== undefined) c.set("runnerSession", owner.sessionId);
    await next();
  };
}

/** The answer to a request without a standing runner token. */
export function unauthorized(): ProblemError {
  return new ProblemError(
    "unauthorized",
    "Send Authorization: Bearer <runner token> (keel env token NAME).",
    {},
    { "www-authenticate": 'Bearer realm="keel-runner"' },
  );
}
