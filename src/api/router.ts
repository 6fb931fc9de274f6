/**
 * The Hono router every part of the API is built from: the tenant variables set by the bearer
 * auth, and schema validation failures answered as `invalid-request` problems. Route modules
 * build their routes on one of these and `createApp` mounts them, so the app's type carries
 * every route (what `hono/client` reads: see `ApiApp`).
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { TenantVariables } from "./auth";
import { ProblemError } from "./problems";

export type ApiEnv = { Variables: TenantVariables };
/** A router before any route is added (the Slack routes and the app shell take this). */
export type ApiRouter = OpenAPIHono<ApiEnv>;

export function createRouter(): ApiRouter {
  return new OpenAPIHono<ApiEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        throw new ProblemError("invalid-request", "The request does not match the schema.", {
          errors: result.error.issues.map((issue) => ({
            path: issue.path.join("."),
            message: issue.message,
          })),
        });
      }
    },
  });
}
