/**
 * The tenant secrets' key of `keel dev`: the caller's own KEEL_VAULT_KEY_FILE or
 * KEEL_VAULT_KMS_KEY_ID when set, else a key file in the data folder (`vault.key`: 32 random
 * bytes, base64, mode 0600), made once and kept across restarts, since the secrets stored in the
 * stack's S3 can be read only with it. The API and the worker it starts get the same setting.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The file's name in the data folder. */
const DEV_VAULT_KEY_FILE = "vault.key";

/** The vault setting the stack's API and worker get. */
export function devVaultEnv(
  env: NodeJS.ProcessEnv,
  dataDir: string,
): { KEEL_VAULT_KEY_FILE: string } | { KEEL_VAULT_KMS_KEY_ID: string } {
  if (env.KEEL_VAULT_KMS_KEY_ID) return { KEEL_VAULT_KMS_KEY_ID: env.KEEL_VAULT_KMS_KEY_ID };
  if (env.KEEL_VAULT_KEY_FILE) return { KEEL_VAULT_KEY_FILE: env.KEEL_VAULT_KEY_FILE };
  const path = join(dataDir, DEV_VAULT_KEY_FILE);
  try {
    // `wx`: never replaces a key (another stack on the same folder may have just made it).
    writeFileSync(path, `${randomBytes(32).toString("base64")}\n`, { flag: "wx", mode: 0o600 });
  } catch (error) {
    if ((error as { code?: unknown }).code !== "EEXIST") throw error;
    // Made by an earlier start: readable by its owner only, whatever the umask was then.
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  }
  return { KEEL_VAULT_KEY_FILE: path };
}
