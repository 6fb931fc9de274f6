/**
 * Run settings from a validated message body: the caller's choices merged over the defaults,
 * with the checks a schema cannot make (the model exists in the catalog, workspace sources and
 * network policies the deployment can honour).
 */
import type { z } from "@hono/zod-openapi";
import type { ModelCatalog } from "../providers/models";
import { DEFAULT_RUN_SETTINGS, type RunSettings } from "../workflows/types";
import { ProblemError } from "./problems";
import type { MessageBodySchema } from "./schemas";

export type MessageBody = z.infer<typeof MessageBodySchema>;

export interface SettingsOptions {
  catalog: ModelCatalog;
  /** `directory` sources and local git clones read the worker's disk: off unless configured. */
  allowDirectoryWorkspaces: boolean;
  defaults?: RunSettings;
}

/** Git URLs a remote caller may clone from; local paths and file:// need directory access. */
const REMOTE_GIT_URL = /^(https?:\/\/|ssh:\/\/|git:\/\/|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:)/;

/** Throws ProblemError("invalid-request") naming the offending field. */
export function runSettingsFrom(body: MessageBody, options: SettingsOptions): RunSettings {
  const defaults = options.defaults ?? DEFAULT_RUN_SETTINGS;
  const settings: RunSettings = { ...defaults };
  if (body.model !== undefined) {
    if (!options.catalog.find(body.model)) {
      throw new ProblemError("invalid-request", `Unknown model "${body.model}"`, {
        errors: [{ path: "model", message: "not in the model catalog" }],
      });
    }
    settings.model = body.model;
  }
  if (body.systemPrompt !== undefined) settings.systemPrompt = body.systemPrompt;
  if (body.tools !== undefined) settings.tools = [...new Set(body.tools)];
  if (body.hooks !== undefined) settings.hooks = [...new Set(body.hooks)];
  if (body.policy !== undefined) {
    settings.policy = {
      rules: body.policy.rules.map((rule) => ({ ...rule })),
      default: body.policy.default ?? defaults.policy.default,
      approvalTimeoutMs: body.policy.approvalTimeoutMs ?? defaults.policy.approvalTimeoutMs,
    };
  }
  const workspace = body.workspace;
  if (workspace !== undefined) {
    const readsWorkerDisk =
      workspace.type === "directory" || (workspace.type === "git" && !REMOTE_GIT_URL.test(workspace.url));
    if (readsWorkerDisk && !options.allowDirectoryWorkspaces) {
      throw new ProblemError(
        "invalid-request",
        "Workspaces from the worker's own disk (directory sources, local git paths) are disabled",
        { errors: [{ path: "workspace", message: "not allowed by this deployment" }] },
      );
    }
    settings.workspace = workspace;
  }
  if (body.network !== undefined) {
    if (typeof body.network === "object") {
      // No egress proxy exists in this deployment: an allowlist would be a promise nothing keeps.
      throw new ProblemError(
        "invalid-request",
        'A network allowlist needs an egress proxy, which this deployment does not have; use network "none" or "full"',
        { errors: [{ path: "network", message: "allowlists are not supported here" }] },
      );
    }
    settings.network = body.network;
  }
  return settings;
}
