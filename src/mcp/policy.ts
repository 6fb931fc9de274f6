/**
 * What the operator lets runs' MCP servers have (read by the API and again by the worker):
 * - KEEL_MCP_SECRETS: names of worker environment variables a server's `env` or `headers` may
 *   name as `{secret: NAME}` (comma-separated; default none). The value is read on the worker and
 *   never enters the session or the history. A stdio server runs a command the run chose, in the
 *   run's sandbox: a secret listed here is readable by any run of the deployment that names it.
 * - KEEL_MCP_HOSTS: hosts of HTTP servers that may resolve to loopback, private or link-local
 *   addresses (comma-separated; default none: such servers are refused, as every other outbound
 *   request named by a caller is, see net/egress-policy.ts).
 * - KEEL_MCP_MOUNTS (worker only): host folders bound read-only, at the same path, into the sandbox
 *   of stdio servers, where their programs live (a node_modules folder, a Python environment).
 */
import { normalizeHost } from "../net/egress-policy";

export const MCP_SECRETS_SETTING = "KEEL_MCP_SECRETS";
export const MCP_HOSTS_SETTING = "KEEL_MCP_HOSTS";
export const MCP_MOUNTS_SETTING = "KEEL_MCP_MOUNTS";

export interface McpPolicy {
  secrets: string[];
  privateHosts: string[];
}

const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function list(text: string | undefined): string[] {
  return (text ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
}

/** The policy from the environment; throws naming the setting for a malformed entry. */
export function mcpPolicyFromEnv(env: NodeJS.ProcessEnv): McpPolicy {
  const secrets = list(env[MCP_SECRETS_SETTING]);
  const bad = secrets.find((name) => !SECRET_NAME.test(name));
  if (bad)
    throw new Error(`${MCP_SECRETS_SETTING}: ${JSON.stringify(bad)} is not an environment variable name`);
  return { secrets, privateHosts: list(env[MCP_HOSTS_SETTING]).map(normalizeHost) };
}

/** Folders of KEEL_MCP_MOUNTS; throws for one that is not absolute. */
export function mcpMountsFromEnv(env: NodeJS.ProcessEnv): string[] {
  const mounts = list(env[MCP_MOUNTS_SETTING]);
  const bad = mounts.find((mount) => !mount.startsWith("/"));
  if (bad) throw new Error(`${MCP_MOUNTS_SETTING}: ${JSON.stringify(bad)} is not an absolute path`);
  return mounts;
}

/** Why an HTTP server's URL is refused before any connection, or undefined. */
export function mcpUrlRefusal(text: string): string | undefined {
  if (!URL.canParse(text)) return "not a URL";
  const url = new URL(text);
  if (url.protocol !== "https:" && url.protocol !== "http:") return "only http:// and https:// URLs";
  if (url.username || url.password)
    return "no user info in the URL (send credentials as headers from secrets)";
  return undefined;
}
