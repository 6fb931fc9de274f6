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
import { z } from "zod";
import type { SettingsShape } from "../core/env-settings";
import { normalizeHost } from "../net/egress-policy";

export const MCP_SECRETS_SETTING = "KEEL_MCP_SECRETS";
export const MCP_HOSTS_SETTING = "KEEL_MCP_HOSTS";
export const MCP_MOUNTS_SETTING = "KEEL_MCP_MOUNTS";

/** The MCP variables, as fields of a process's settings schema (checked by the functions below). */
export const MCP_ENV = {
  [MCP_SECRETS_SETTING]: z
    .string()
    .optional()
    .describe(
      "Comma-separated names of variables of this process a run's MCP server may name as {secret: NAME}; any run of the deployment may name them.",
    ),
  [MCP_HOSTS_SETTING]: z
    .string()
    .optional()
    .describe(
      "Comma-separated hosts of HTTP MCP servers that may resolve to loopback, private or link-local addresses.",
    ),
  [MCP_MOUNTS_SETTING]: z
    .string()
    .optional()
    .describe(
      "Comma-separated absolute host folders bound read-only into the sandbox of stdio MCP servers (where their programs live).",
    ),
} satisfies SettingsShape;

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

/** What a worker's or a runner's MCP servers may have, read once at the process's entry point. */
export interface McpSettings {
  policy: McpPolicy;
  /** Host folders bound read-only into stdio servers' sandboxes (KEEL_MCP_MOUNTS). */
  mounts: string[];
  /** The values of `policy.secrets` in the process's environment, and no other variable of it. */
  secretValues: Record<string, string>;
}

/** No secrets, no private hosts, no mounts: what a process without KEEL_MCP_* settings allows. */
export const NO_MCP_SETTINGS: McpSettings = {
  policy: { secrets: [], privateHosts: [] },
  mounts: [],
  secretValues: {},
};

/** KEEL_MCP_SECRETS, KEEL_MCP_HOSTS and KEEL_MCP_MOUNTS, with the values of the secrets listed. */
export function mcpSettingsFromEnv(env: NodeJS.ProcessEnv): McpSettings {
  const policy = mcpPolicyFromEnv(env);
  return { policy, mounts: mcpMountsFromEnv(env), secretValues: mcpSecretValues(policy, env) };
}

/** The values of the policy's secrets that `env` sets, and no other variable of it. */
function mcpSecretValues(policy: McpPolicy, env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    policy.secrets.flatMap((name) => {
      const value = env[name];
      return value === undefined ? [] : [[name, value]];
    }),
  );
}

/** Folders of KEEL_MCP_MOUNTS; throws for one that is not absolute. */
function mcpMountsFromEnv(env: NodeJS.ProcessEnv): string[] {
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
