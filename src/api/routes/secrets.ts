/**
 * Tenant secrets (docs/api.md, "Secrets"): `PUT /v1/secrets/{name}` creates or rotates one,
 * `GET /v1/secrets` and `GET /v1/secrets/{name}` answer metadata, `DELETE /v1/secrets/{name}`
 * removes one. Values are write-only: no response, listing or refusal carries one, and the API
 * logs no request body. Every name is looked up under the caller's own tenant.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { type SecretStore, TooManySecretsError } from "../../tenants/secrets";
import { parseAllowlist } from "../../tools/egress-proxy";
import { VAULT_SETTING_NAMES } from "../../vault/settings";
import {
  MAX_SECRET_HOSTS,
  MAX_SECRET_VALUE_BYTES,
  SECRET_NAME_PATTERN,
  SECRET_NAME_RULE,
  SECRET_PLACEMENTS,
  type SecretPlacement,
  secretNameRefusal,
  secretValueRefusal,
} from "../../vault/types";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import { problemResponses } from "./common";

/**
 * The rules of types.ts as patterns, so the OpenAPI document states exactly what is accepted (the
 * API fuzz holds the server to it): a name that is not reserved, a host as `parseAllowlist` reads
 * it, a value without line breaks or NUL. The handler checks the same rules again with their own
 * messages (and the value's length in bytes, which no pattern states).
 */
const LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const PORT = "(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])";
const HOST_PATTERN = new RegExp(`^(?:\\*\\.)?(?:${LABEL}\\.)+(?![0-9]+(?::|$))${LABEL}(?::${PORT})?$`);
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the characters the rule refuses.
const VALUE_PATTERN = /^[^\r\n\x00]+$/;

const SecretNameParamsSchema = z.object({
  name: z
    .string()
    .regex(SECRET_NAME_PATTERN, SECRET_NAME_RULE)
    .openapi({ param: { name: "name", in: "path" }, example: "GITHUB_TOKEN" }),
});

const PlacementSchema = z.enum(SECRET_PLACEMENTS as [SecretPlacement, ...SecretPlacement[]]);

const SetSecretBodySchema = z
  .object({
    // Zod's messages for these never quote the value; the handler checks its length in bytes.
    value: z
      .string()
      .min(1)
      .max(MAX_SECRET_VALUE_BYTES)
      .regex(VALUE_PATTERN, "a secret's value may not contain line breaks or NUL characters")
      .openapi({
        description: `The value (write-only: never answered). At most ${MAX_SECRET_VALUE_BYTES} bytes of UTF-8, no line breaks or NUL`,
        format: "password",
        writeOnly: true,
      }),
    hosts: z
      .array(
        z
          .string()
          .max(255)
          .regex(
            HOST_PATTERN,
            "a host name (example.com, *.example.com, example.com:8443), not an address or a URL",
          ),
      )
      .min(1)
      .max(MAX_SECRET_HOSTS)
      .openapi({
        description:
          "Hosts the value may be sent to, as network allowlist entries (api.github.com, *.example.com, git.example.com:8443); a run naming the secret may reach them",
        example: ["api.github.com"],
      }),
    in: z.array(PlacementSchema).min(1).max(SECRET_PLACEMENTS.length).optional().openapi({
      description:
        'Where the egress proxy puts the value in a request to one of `hosts`: "header" (any header value), "basic-auth" (the user or password of Authorization: Basic). Default both',
    }),
  })
  .strict()
  .openapi("SetSecretRequest");

const SecretMetadataSchema = z
  .object({
    name: z.string(),
    hosts: z.array(z.string()),
    in: z.array(PlacementSchema),
    createdAt: z.string(),
    updatedAt: z.string(),
    version: z.number().int().openapi({ description: "1 at the first set, one more at each rotation" }),
  })
  .openapi("Secret", { description: "A tenant secret's binding and times; never its value" });

const SecretListSchema = z.object({ secrets: z.array(SecretMetadataSchema) }).openapi("SecretList");

const json = <T extends z.ZodType>(schema: T) => ({ content: { "application/json": { schema } } });

const VAULT_PROBLEMS = problemResponses(400, 404, 429, 503);

const putSecret = createRoute({
  method: "put",
  path: "/v1/secrets/{name}",
  summary:
    "Creates the caller's secret (201) or rotates it (200: version + 1, takes effect at the next tool call)",
  request: {
    params: SecretNameParamsSchema,
    body: { required: true, content: { "application/json": { schema: SetSecretBodySchema } } },
  },
  responses: {
    200: { description: "Rotated", ...json(SecretMetadataSchema) },
    201: { description: "Created", ...json(SecretMetadataSchema) },
    ...VAULT_PROBLEMS,
  },
});

const listSecrets = createRoute({
  method: "get",
  path: "/v1/secrets",
  summary: "The caller's secrets: bindings and times, never values",
  responses: { 200: { description: "Secrets", ...json(SecretListSchema) }, ...VAULT_PROBLEMS },
});

const getSecret = createRoute({
  method: "get",
  path: "/v1/secrets/{name}",
  summary: "One of the caller's secrets: binding and times, never the value",
  request: { params: SecretNameParamsSchema },
  responses: { 200: { description: "Secret", ...json(SecretMetadataSchema) }, ...VAULT_PROBLEMS },
});

const deleteSecret = createRoute({
  method: "delete",
  path: "/v1/secrets/{name}",
  summary: "Deletes the caller's secret: calls from the next one on no longer get its value",
  request: { params: SecretNameParamsSchema },
  responses: { 204: { description: "Deleted" }, ...VAULT_PROBLEMS },
});

function vaultOf(deps: RouteContext): SecretStore {
  if (!deps.vault)
    throw new ProblemError(
      "vault-not-configured",
      `Tenant secrets need ${VAULT_SETTING_NAMES.join(" or ")} on the API and the workers (docs/deploy.md).`,
    );
  return deps.vault;
}

function validName(name: string): string {
  const refusal = secretNameRefusal(name);
  if (refusal)
    throw new ProblemError("invalid-request", `name: ${refusal}.`, {
      errors: [{ path: "name", message: refusal }],
    });
  return name;
}

function refuse(path: string, message: string): never {
  throw new ProblemError("invalid-request", `${path}: ${message}.`, { errors: [{ path, message }] });
}

/** The hosts as stored: each entry parsed as the egress proxy will parse it, lower case, once. */
function validHosts(hosts: readonly string[]): string[] {
  const normalized = [...new Set(hosts.map((host) => host.trim().toLowerCase()))];
  normalized.forEach((host, index) => {
    try {
      parseAllowlist([host]);
    } catch (error) {
      refuse(`hosts.${index}`, error instanceof Error ? error.message : String(error));
    }
  });
  return normalized;
}

export function secretRoutes(deps: RouteContext) {
  return createRouter()
    .openapi(putSecret, async (c) => {
      const vault = vaultOf(deps);
      const name = validName(c.req.valid("param").name);
      const body = c.req.valid("json");
      const valueRefusal = secretValueRefusal(body.value);
      if (valueRefusal) refuse("value", valueRefusal);
      const hosts = validHosts(body.hosts);
      const placements = [...new Set(body.in ?? SECRET_PLACEMENTS)];
      try {
        const { metadata, created } = await vault.set(
          c.get("tenantId"),
          { name, hosts, in: placements },
          body.value,
        );
        return created ? c.json(metadata, 201) : c.json(metadata, 200);
      } catch (error) {
        if (error instanceof TooManySecretsError) throw new ProblemError("quota-exceeded", error.message);
        throw error;
      }
    })
    .openapi(listSecrets, async (c) => {
      const vault = vaultOf(deps);
      return c.json({ secrets: await vault.list(c.get("tenantId")) }, 200);
    })
    .openapi(getSecret, async (c) => {
      const vault = vaultOf(deps);
      const name = validName(c.req.valid("param").name);
      const metadata = await vault.get(c.get("tenantId"), name);
      if (!metadata) throw new ProblemError("secret-not-found", `This tenant has no secret ${name}.`);
      return c.json(metadata, 200);
    })
    .openapi(deleteSecret, async (c) => {
      const vault = vaultOf(deps);
      const name = validName(c.req.valid("param").name);
      if (!(await vault.delete(c.get("tenantId"), name)))
        throw new ProblemError("secret-not-found", `This tenant has no secret ${name}.`);
      return c.body(null, 204);
    });
}
