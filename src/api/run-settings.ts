/**
 * Run settings from a validated message body: the caller's choices merged over the defaults.
 * What a caller may ask for (catalog models, workspace sources the deployment allows) is checked
 * by the body's schema (`messageBodySchema`), so the OpenAPI document states the same rules.
 */
import { DEFAULT_RUN_SETTINGS, type RunSettings } from "../contracts/runs";
import type { MessageBody } from "./schemas";

export function runSettingsFrom(
  body: Omit<MessageBody, "text" | "delivery">,
  defaults: RunSettings = DEFAULT_RUN_SETTINGS,
): RunSettings {
  const settings: RunSettings = { ...defaults };
  if (body.model !== undefined) {
    // A list is the first model and the ones a failing turn goes to, in order (each once).
    const [first, ...fallbacks] = [...new Set(typeof body.model === "string" ? [body.model] : body.model)];
    if (first !== undefined) settings.model = first;
    if (fallbacks.length > 0) settings.fallbackModels = fallbacks;
    else delete settings.fallbackModels;
  }
  if (body.systemPrompt !== undefined) settings.systemPrompt = body.systemPrompt;
  if (body.tools !== undefined) settings.tools = [...new Set(body.tools)];
  if (body.agents !== undefined) settings.agents = body.agents.map((agent) => ({ ...agent }));
  if (body.hooks !== undefined) settings.hooks = [...new Set(body.hooks)];
  if (body.limits !== undefined) settings.limits = { ...defaults.limits, ...body.limits };
  if (body.policy !== undefined) {
    settings.policy = {
      rules: body.policy.rules.map((rule) => ({ ...rule })),
      default: body.policy.default ?? defaults.policy.default,
      approvalTimeoutMs: body.policy.approvalTimeoutMs ?? defaults.policy.approvalTimeoutMs,
    };
  }
  if (body.workspace !== undefined) settings.workspace = body.workspace;
  // The schema admits "none" or "full"; the route has already refused "full" for a tenant the
  // deployment does not enable it for (KEEL_SANDBOX_NETWORK_FULL).
  if (body.network !== undefined) settings.network = body.network;
  // Names only; the route has checked that the tenant has each (`refuseUnusableSecrets`).
  if (body.secrets !== undefined && body.secrets.length > 0) settings.secrets = [...new Set(body.secrets)];
  // The route has checked that the environment is one of the tenant's.
  if (body.environment !== undefined) settings.environment = body.environment;
  if (body.environmentWaitSeconds !== undefined)
    settings.timeouts = { ...settings.timeouts, environmentWaitMs: body.environmentWaitSeconds * 1000 };
  // One server per name (what the document can state): a later one of the same name replaces it.
  if (body.mcpServers !== undefined)
    settings.mcpServers = [...new Map(body.mcpServers.map((server) => [server.name, server])).values()];
  return settings;
}
