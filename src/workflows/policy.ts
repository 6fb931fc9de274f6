/** Tool policy: allow, deny or ask, by tool name and a pattern over the call's arguments. */
import type { PolicyAction, ToolPolicy } from "./types";

/**
 * The action for a call: the first rule whose tool matches (`*` matches every tool) and whose
 * `argumentsPattern` (a regular expression) matches the JSON arguments; the default otherwise.
 * An invalid pattern never matches (settings are validated where they enter, at the API).
 */
export function decidePolicy(policy: ToolPolicy, toolName: string, argumentsJson: string): PolicyAction {
  for (const rule of policy.rules) {
    if (rule.tool !== "*" && rule.tool !== toolName) continue;
    if (rule.argumentsPattern !== undefined && !safeTest(rule.argumentsPattern, argumentsJson)) continue;
    return rule.action;
  }
  return policy.default;
}

function safeTest(pattern: string, text: string): boolean {
  try {
    return new RegExp(pattern).test(text);
  } catch {
    return false;
  }
}
