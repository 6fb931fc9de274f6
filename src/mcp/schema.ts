/** The `mcpServers` run setting as the API validates it (the worker checks secrets and addresses again). */

import { isIP } from "node:net";
import { z } from "@hono/zod-openapi";
import { classifyAddress, normalizeHost } from "../net/egress-policy";
import { MCP_HOSTS_SETTING, MCP_SECRETS_SETTING, type McpPolicy, mcpUrlRefusal } from "./policy";
import { MCP_SERVER_NAME } from "./tool-names";

/** Most servers one run may name. */
export const MAX_MCP_SERVERS = 10;

export function mcpServersSchema(policy: McpPolicy = { secrets: [], privateHosts: [] }) {
  const secretRef = z
    .object({ secret: z.string().min(1).max(128) })
    .refine((ref) => policy.secrets.includes(ref.secret), {
      error: (issue) =>
        `the secret ${JSON.stringify((issue.input as { secret?: unknown }).secret)} is not one the operator lets MCP servers have (${MCP_SECRETS_SETTING})`,
    });
  const value = z.union([z.string().max(4_096), secretRef]);
  const values = (key: z.ZodString) =>
    z.record(key, value).refine((record) => Object.keys(record).length <= 50, "at most 50 entries");
  const common = {
    name: z.string().regex(MCP_SERVER_NAME, "lower-case letters, digits, _ and - (at most 32, no __)"),
    timeoutMs: z.number().int().min(100).max(3_600_000).optional(),
    replay: z
      .record(z.string().min(1).max(128), z.enum(["safe", "idempotent-with-check", "unsafe"]))
      .optional()
      .openapi({ description: "Replay class per tool name, overriding the tool's annotations" }),
  };
  const stdio = z
    .object({
      ...common,
      command: z.string().min(1).max(1_024),
      args: z.array(z.string().max(4_096)).max(100).optional(),
      env: values(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name")).optional(),
    })
    .strict();
  const http = z
    .object({
      ...common,
      url: z
        .string()
        .max(2_048)
        .superRefine((text, ctx) => {
          const refusal = mcpUrlRefusal(text) ?? internalHostRefusal(text, policy);
          if (refusal) ctx.addIssue({ code: "custom", message: refusal });
        }),
      headers: values(z.string().regex(/^[A-Za-z0-9-]{1,128}$/, "a header name")).optional(),
    })
    .strict();
  return z
    .array(z.union([stdio, http]))
    .max(MAX_MCP_SERVERS)
    .refine(
      (servers) => new Set(servers.map((server) => server.name)).size === servers.length,
      "names must differ",
    )
    .openapi({
      description:
        "MCP tool servers of the run: {name, command, args?, env?} started inside the run's sandbox, or {name, url, headers?} (Streamable HTTP). Values are text or {secret: NAME}, a worker environment variable the operator lists in KEEL_MCP_SECRETS. The model sees their tools as <name>__<tool>.",
    });
}

/** An IP-literal host that is not public and not allowed by the operator (names are checked when connecting). */
function internalHostRefusal(text: string, policy: McpPolicy): string | undefined {
  const host = normalizeHost(new URL(text).hostname);
  if (policy.privateHosts.includes(host)) return undefined;
  if (host === "localhost" || (isIP(host) && classifyAddress(host) !== "public"))
    return `${host} is not a public address, and the operator did not allow it (${MCP_HOSTS_SETTING})`;
  return undefined;
}
