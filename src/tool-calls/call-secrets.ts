/**
 * A tool call's tenant secrets (docs/tools.md, "Secrets"): the names its run gives
 * (RunSettings.secrets, on the activity's input) resolved fresh for the call, so a rotation takes
 * effect at the next call and a deletion stops the value there. Only calls that start processes
 * get them (their egress proxy injects the values); the values live in the call's sandbox policy
 * and nowhere else — never in a log line, an error, a result, a span or the history.
 */
import type { ResolvedSecret, SecretResolver } from "../vault/types";

/** Tools whose calls start processes in the sandbox: the calls a run's secrets are resolved for. */
const PROCESS_TOOLS: ReadonlySet<string> = new Set(["bash"]);

/** Whether a call of `toolName` with the run's `names` needs its secrets resolved. */
export function callNeedsSecrets(toolName: string, names: readonly string[] | undefined): boolean {
  return PROCESS_TOOLS.has(toolName) && (names?.length ?? 0) > 0;
}

/**
 * The store or the key of the tenant's secrets failed (S3, KMS, a stored secret that does not
 * open): the call's attempt fails and is retried, as for other storage faults; the call is never
 * run without its secrets. The message names the secrets and the cause's kind, never a value.
 */
export class SecretsUnavailableError extends Error {
  constructor(names: readonly string[], cause: unknown) {
    super(
      `The tenant secrets this call names (${names.join(", ")}) could not be read: ${causeText(cause)}; the call was not run and is tried again.`,
    );
    this.name = "SecretsUnavailableError";
  }
}

/** A vault error's name and message: the store's errors name objects and keys, never values. */
function causeText(cause: unknown): string {
  if (!(cause instanceof Error)) return "unknown error";
  return `${cause.name}: ${cause.message}`.slice(0, 500);
}

/** Why a call naming secrets cannot run here at all (no vault on this process), for its error result. */
export function noVaultText(names: readonly string[], where = "worker"): string {
  return `This run names tenant secrets (${names.join(", ")}), and this ${where} has no vault configured (KEEL_VAULT_KEY_FILE or KEEL_VAULT_KMS_KEY_ID): the call was not run, since it would have run without them.`;
}

/**
 * The sandbox policy fields of a call's secrets, read now: the secrets the tenant has, with their
 * values, and the names it no longer has. Throws `SecretsUnavailableError` when the store fails.
 */
export async function resolveCallSecrets(
  vault: SecretResolver,
  tenantId: string,
  names: readonly string[],
): Promise<{ secrets: ResolvedSecret[]; missingSecrets: string[] }> {
  try {
    const { secrets, missing } = await vault.resolve(tenantId, names);
    return { secrets, missingSecrets: missing };
  } catch (error) {
    throw new SecretsUnavailableError(names, error);
  }
}
