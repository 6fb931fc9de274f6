/**
 * The Hono router every part of the API is built from: the tenant variables set by the bearer
 * auth, and schema validation failures answered as `invalid-request` problems. Route modules
 * build their routes on one of these and `createApp` mounts them, so the app's type carries
 * every route (what `hono/client` reads: see `ApiApp`).
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { TenantVariables } from "./auth";
import { ProblemError } from "./problems";
import { reportedIssues } from "./schema-issues";

export type ApiEnv = { Variables: TenantVariables };
/** A router before any route is added (the Slack routes and the app shell take this). */
export type ApiRouter = OpenAPIHono<ApiEnv>;

/** Schema problems named in a refusal's `detail` (all of them are in `errors`). */
const DETAILED_ISSUES = 3;

export function createRouter(): ApiRouter {
  return new OpenAPIHono<ApiEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        const errors = reportedIssues(result.error.issues);
        // The first problems in `detail` too: clients that show only the detail still say what is wrong.
        // A union reports one problem once per branch: each is named once.
        const named = [
          ...new Set(errors.map(({ path, message }) => (path ? `${path}: ${message}` : message))),
        ]
          .slice(0, DETAILED_ISSUES)
          .join("; ");
        throw new ProblemError("invalid-request", `The request does not match the schema (${named}).`, {
          errors,
        });
      }
    },
  });
}
