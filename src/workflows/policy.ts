/** Tool policy: allow, deny or ask, by tool name and a pattern over the call's arguments. */
import type { PolicyAction, ToolPolicy } from "../contracts/runs";

/**
 * The action for a call: the first rule whose tool matches (`*` matches every tool, `fs__*` every
 * tool of the MCP server `fs`) and whose
 * `argumentsPattern` (a regular expression) matches the JSON arguments; the default otherwise.
 * An invalid pattern never matches (settings are validated where they enter, at the API).
 */
export function decidePolicy(policy: ToolPolicy, toolName: string, argumentsJson: string): PolicyAction {
  for (const rule of policy.rules) {
    if (!toolMatches(rule.tool, toolName)) continue;
    if (rule.argumentsPattern !== undefined && !safeTest(rule.argumentsPattern, argumentsJson)) continue;
    return rule.action;
  }
  return policy.default;
}

/** `*` matches every tool, `<server>__*` every tool of that MCP server, anything else itself. */
function toolMatches(pattern: string, toolName: string): boolean {
  if (pattern === "*" || pattern === toolName) return true;
  return pattern.endsWith("__*") && toolName.startsWith(pattern.slice(0, -1));
}

function safeTest(pattern: string, text: string): boolean {
  try {
    return new RegExp(pattern).test(text);
  } catch {
    return false;
  }
}
