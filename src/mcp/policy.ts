/**
 * What the operator lets runs' MCP servers have (read by the API and again by the worker):
 * - KEEL_MCP_HOSTS: hosts of HTTP servers that may resolve to loopback, private or link-local
 *   addresses (comma-separated; default none: such servers are refused, as every other outbound
 *   request named by a caller is, see net/egress-policy.ts).
 * - KEEL_MCP_MOUNTS (worker only): host folders bound read-only, at the same path, into the sandbox
 *   of stdio servers, where their programs live (a node_modules folder, a Python environment).
 *
 * A server's `{secret: NAME}` names one of the run's tenant's secrets (docs/tools.md, "Secrets"),
 * never a variable of the worker: the operator-wide KEEL_MCP_SECRETS is retired
 * (core/env-settings.ts, RETIRED_SETTINGS).
 */
import { z } from "zod";
import type { SettingsShape } from "../core/env-settings";
import { normalizeHost } from "../net/egress-policy";

export const MCP_HOSTS_SETTING = "KEEL_MCP_HOSTS";
export const MCP_MOUNTS_SETTING = "KEEL_MCP_MOUNTS";

/** The MCP variables, as fields of a process's settings schema (checked by the functions below). */
export const MCP_ENV = {
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
  privateHosts: string[];
}

function list(text: string | undefined): string[] {
  return (text ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
}

/** The policy from the environment. */
export function mcpPolicyFromEnv(env: NodeJS.ProcessEnv): McpPolicy {
  return { privateHosts: list(env[MCP_HOSTS_SETTING]).map(normalizeHost) };
}

/** What a worker's or a runner's MCP servers may have, read once at the process's entry point. */
export interface McpSettings {
  policy: McpPolicy;
  /** Host folders bound read-only into stdio servers' sandboxes (KEEL_MCP_MOUNTS). */
  mounts: string[];
}

/** No private hosts, no mounts: what a process without KEEL_MCP_* settings allows. */
export const NO_MCP_SETTINGS: McpSettings = {
  policy: { privateHosts: [] },
  mounts: [],
};

/** KEEL_MCP_HOSTS and KEEL_MCP_MOUNTS. */
export function mcpSettingsFromEnv(env: NodeJS.ProcessEnv): McpSettings {
  return { policy: mcpPolicyFromEnv(env), mounts: mcpMountsFromEnv(env) };
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
