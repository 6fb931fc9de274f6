/**
 * A tenant's settings applied to the models a run asks for: the tenant may only narrow what the
 * deployment allows (the message schema has already applied the operator's rules).
 */
import { modelFromSpec } from "../providers/model-spec";
import { covers, type ModelUrlPolicy } from "../providers/model-urls";
import type { TenantSettings } from "./types";

/** Which setting refused a model, and why (the API's 403 names the setting). */
export interface ModelRefusal {
  setting: "models" | "modelHosts";
  message: string;
}

/** Whether `model` matches a pattern: literal characters, `*` any run of characters. */
export function matchesPattern(pattern: string, model: string): boolean {
  const source = pattern
    .split("*")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${source}$`, "s").test(model);
}

/** Why the tenant may not use `model` (a catalog id or a one-line spec), or undefined. */
export function modelRefusal(settings: TenantSettings, model: string): ModelRefusal | undefined {
  if (settings.models !== undefined && !settings.models.some((pattern) => matchesPattern(pattern, model)))
    return {
      setting: "models",
      message: `The model ${JSON.stringify(model)} is not among this tenant's allowed models (tenant setting \`models\`).`,
    };
  const spec = modelFromSpec(model);
  if (settings.modelHosts !== undefined && spec?.baseUrl) {
    const baseUrl = spec.baseUrl;
    if (!settings.modelHosts.some((entry) => covers(spec.api, entry, baseUrl)))
      return {
        setting: "modelHosts",
        message: `The base URL ${baseUrl} is not among this tenant's allowed model hosts (tenant setting \`modelHosts\`).`,
      };
  }
  return undefined;
}

/**
 * Entries of `modelHosts` the operator does not allow one-line models to name (for any model
 * API): a tenant's list may only narrow the operator's.
 */
export function hostsBeyondOperator(hosts: readonly string[], policy: ModelUrlPolicy): string[] {
  const apis = ["openai-completions", "openai-responses", "anthropic-messages"] as const;
  return hosts.filter(
    (host) =>
      !URL.canParse(host) ||
      !apis.some((api) => policy.baseUrls(api).some((base) => covers(api, base, host))),
  );
}
