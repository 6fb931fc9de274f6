/**
 * Tenant secrets (docs/tools.md, "Secrets"): credentials an agent can use and never see. A tenant
 * stores a value with the hosts it is bound to; a run names the secrets it may use; inside the
 * sandbox each named secret is an environment variable holding an opaque placeholder, and the
 * call's egress proxy swaps the value in only on HTTPS requests to a bound host, in the places the
 * binding allows. Values are write-only: never returned, logged, stored in a session, an event, a
 * trace or a snapshot.
 */

/** Where in a request to a bound host the egress proxy replaces a secret's placeholder. */
export type SecretPlacement =
  /** Any request header's value (`Authorization: Bearer <placeholder>`, `X-Api-Key: …`). */
  | "header"
  /** The user or password of an `Authorization: Basic` header, decoded and encoded again (git over HTTPS). */
  | "basic-auth";

export const SECRET_PLACEMENTS: readonly SecretPlacement[] = ["header", "basic-auth"];

/** What a secret is bound to: its name (the sandbox variable) and where its value may go. */
export interface SecretBinding {
  /** Upper-case environment variable name (`GITHUB_TOKEN`), unique per tenant. */
  name: string;
  /**
   * Hosts the value may be sent to, as network allowlist entries (`api.github.com`,
   * `*.example.com`, `git.example.com:8443`). A run that names the secret may reach them.
   */
  hosts: string[];
  /** Where the value is put in a request to one of `hosts`. */
  in: SecretPlacement[];
}

/** A stored secret as the API lists it: the binding and its times, never the value. */
export interface SecretMetadata extends SecretBinding {
  createdAt: string;
  updatedAt: string;
  /** 1 at the first `set`, one more at each rotation. */
  version: number;
}

/** A secret with its value, decrypted for one tool call (or one MCP connection) and then dropped. */
export interface ResolvedSecret extends SecretBinding {
  value: string;
}

/** The secrets a call names, read when the call starts. */
export interface SecretsForCall {
  secrets: ResolvedSecret[];
  /** Names the tenant no longer has (deleted since the run started): their placeholders carry nothing. */
  missing: string[];
}

/** Reads a tenant's secrets for a call; the one way a worker or the API gets values. */
export interface SecretResolver {
  /** Never throws for a missing name (it is listed in `missing`); throws when the store or key fails. */
  resolve(tenantId: string, names: readonly string[]): Promise<SecretsForCall>;
}

/** A secret's name: an upper-case environment variable name. */
export const SECRET_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;

/** Names the sandbox sets itself or that steer programs inside it: a secret may not take them. */
const RESERVED_NAMES = new Set([
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "PWD",
  "OLDPWD",
  "TERM",
  "TMPDIR",
  "LANG",
  "HOSTNAME",
  "ENV",
  "IFS",
  "PS4",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "NO_PROXY",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "CURL_CA_BUNDLE",
  "REQUESTS_CA_BUNDLE",
  "NODE_EXTRA_CA_CERTS",
  "NODE_OPTIONS",
  "GIT_SSL_CAINFO",
  "PIP_CERT",
  "AWS_CA_BUNDLE",
  "CARGO_HTTP_CAINFO",
]);
const RESERVED_PREFIXES = ["KEEL_", "LD_", "LC_", "BASH_", "GIT_", "NPM_CONFIG_"];

/**
 * Every rule of a secret's name as one pattern (not reserved, not a reserved prefix, upper-case),
 * so request schemas state exactly what is accepted in the OpenAPI document.
 */
export const SECRET_NAME_PATTERN = new RegExp(
  `^(?!(?:${[...RESERVED_NAMES].join("|")})$)(?!(?:${RESERVED_PREFIXES.join("|")}))[A-Z][A-Z0-9_]{0,63}$`,
);
export const SECRET_NAME_RULE =
  "a secret's name is an upper-case environment variable name (A-Z, 0-9, _; at most 64) that the sandbox does not set itself";

/** Why `name` cannot name a secret, or undefined when it can. */
export function secretNameRefusal(name: string): string | undefined {
  if (!SECRET_NAME.test(name))
    return "a secret's name is an upper-case environment variable name: A-Z, 0-9 and _, starting with a letter, at most 64 characters";
  if (RESERVED_NAMES.has(name) || RESERVED_PREFIXES.some((prefix) => name.startsWith(prefix)))
    return `${name} is a name the sandbox sets or that steers programs inside it; choose another`;
  return undefined;
}

/** Longest value a secret may hold, in bytes of UTF-8. */
export const MAX_SECRET_VALUE_BYTES = 16 * 1024;
/** Hosts one secret may be bound to. */
export const MAX_SECRET_HOSTS = 10;
/** Secrets one tenant may hold, and one run may name. */
export const MAX_TENANT_SECRETS = 100;

/**
 * Why `value` cannot be a secret's value, or undefined. CR, LF and NUL are refused: the value is
 * put into request headers, where a line break would add headers of the caller's choosing.
 */
export function secretValueRefusal(value: string): string | undefined {
  if (value.length === 0) return "a secret's value is empty";
  if (Buffer.byteLength(value, "utf8") > MAX_SECRET_VALUE_BYTES)
    return `a secret's value is at most ${MAX_SECRET_VALUE_BYTES} bytes`;
  if (/[\r\n\0]/.test(value)) return "a secret's value may not contain line breaks or NUL characters";
  return undefined;
}
