/** The `mcpServers` run setting as the API validates it (the worker checks secrets' hosts and addresses again). */

import { isIP } from "node:net";
import { z } from "@hono/zod-openapi";
import { classifyAddress, normalizeHost } from "../net/egress-policy";
import { SECRET_NAME_PATTERN, secretNameRefusal } from "../vault/types";
import { MCP_HOSTS_SETTING, type McpPolicy, mcpUrlRefusal } from "./policy";
import { MCP_SERVER_NAME } from "./tool-names";

/** Most servers one run may name. */
const MAX_MCP_SERVERS = 10;

/**
 * A tenant secret's name in a request: checked with the rule's own message, and stated to the
 * OpenAPI document as the one pattern holding every rule (the API fuzz holds the server to it).
 */
export function secretNameSchema() {
  return z
    .string()
    .superRefine((name, ctx) => {
      const refusal = secretNameRefusal(name);
      if (refusal) ctx.addIssue({ code: "custom", message: refusal });
    })
    .openapi({ pattern: SECRET_NAME_PATTERN.source });
}

export function mcpServersSchema(policy: McpPolicy = { privateHosts: [] }) {
  // `{secret: NAME}` names one of the tenant's secrets; the route checks that the tenant has it.
  const value = z.union([
    z.string().max(4_096),
    z
      .object({
        secret: secretNameSchema(),
      })
      .strict(),
  ]);
  // The key pattern and the count are stated to the document too (it does not read a record's key schema).
  const values = (key: RegExp, what: string) =>
    z
      .record(z.string().regex(key, what), value)
      .refine((record) => Object.keys(record).length <= 50, "at most 50 entries")
      // `propertyNames` is JSON Schema (OpenAPI 3.1) the metadata type does not list; it is passed through.
      .openapi({ maxProperties: 50, ...({ propertyNames: { pattern: key.source } } as object) });
  const common = {
    name: z.string().regex(MCP_SERVER_NAME, "lower-case letters, digits, _ and - (at most 32, no __)"),
    timeoutMs: z.number().int().min(100).max(3_600_000).optional(),
    replay: z
      .record(z.string().min(1).max(128), z.enum(["safe", "idempotent-with-check", "unsafe"]))
      .optional()
      .openapi({
        description: "Replay class per tool name, overriding the tool's annotations",
        // See `values` below: the key's bounds, passed through to the document.
        ...({ propertyNames: { minLength: 1, maxLength: 128 } } as object),
      }),
  };
  const stdio = z
    .object({
      ...common,
      command: z.string().min(1).max(1_024),
      args: z.array(z.string().max(4_096)).max(100).optional(),
      env: values(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name").optional(),
    })
    .strict();
  const http = z
    .object({
      ...common,
      url: z
        .string()
        .max(2_048)
        .regex(
          mcpUrlPattern(policy),
          "an http(s) URL of a public host name, or of a host KEEL_MCP_HOSTS lists",
        )
        .superRefine((text, ctx) => {
          const refusal = mcpUrlRefusal(text) ?? internalHostRefusal(text, policy);
          if (refusal) ctx.addIssue({ code: "custom", message: refusal });
        }),
      headers: values(/^[A-Za-z0-9-]{1,128}$/, "a header name").optional(),
    })
    .strict();
  return z
    .array(z.union([stdio, http]))
    .max(MAX_MCP_SERVERS)
    .openapi({
      description:
        "MCP tool servers of the run: {name, command, args?, env?} started inside the run's sandbox, or {name, url, headers?} (Streamable HTTP). Values are text or {secret: NAME}, one of the tenant's secrets (PUT /v1/secrets/{name}): an HTTP server's header gets the value, sent by the worker only when the server's host is one the secret is bound to; a stdio server's variable gets a placeholder its egress proxy replaces toward the secret's hosts. The model sees their tools as <name>__<tool>. A later server of the same name replaces an earlier one.",
    });
}

/**
 * The URLs the document allows: http(s), no user info, a host name with a dot and a letter-led last
 * label (never an IP literal or `localhost`, which the server refuses unless listed), or a host the
 * operator lists (KEEL_MCP_HOSTS), then an optional port and path.
 */
function mcpUrlPattern(policy: McpPolicy): RegExp {
  const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const listed = policy.privateHosts.map((host) =>
    isIP(host) === 6 ? `\\[${escaped(host)}\\]` : escaped(host),
  );
  const hosts = ["[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*\\.[A-Za-z][A-Za-z0-9-]*", ...listed].join("|");
  const port = "(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?";
  return new RegExp(`^https?://(${hosts})${port}([/?#][^\\s]*)?$`);
}

/** An IP-literal host that is not public and not allowed by the operator (names are checked when connecting). */
function internalHostRefusal(text: string, policy: McpPolicy): string | undefined {
  const host = normalizeHost(new URL(text).hostname);
  if (policy.privateHosts.includes(host)) return undefined;
  if (host === "localhost" || (isIP(host) && classifyAddress(host) !== "public"))
    return `${host} is not a public address, and the operator did not allow it (${MCP_HOSTS_SETTING})`;
  return undefined;
}
