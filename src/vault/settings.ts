/**
 * The vault's settings (VAULT_ENV, read by the API and the worker) and the vault they build: a
 * local key file or an AWS KMS key wraps each tenant's data key. Neither set: no vault (the
 * secrets routes answer 503 naming these settings, and a run naming secrets is refused).
 */
import { readFileSync } from "node:fs";
import { KMSClient } from "@aws-sdk/client-kms";
import { z } from "zod";
import type { SettingsShape } from "../core/env-settings";
import { DATA_KEY_BYTES } from "./crypto";
import { type KeyWrapper, KmsKeyWrapper, LocalKeyWrapper } from "./key-wrapper";

export const VAULT_ENV = {
  KEEL_VAULT_KEY_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Tenant secrets: a file holding 32 random bytes, base64 (`head -c 32 /dev/urandom | base64`), that wraps each tenant's data key; keel dev makes one. Unset with KEEL_VAULT_KMS_KEY_ID unset: no tenant secrets.",
    ),
  KEEL_VAULT_KMS_KEY_ID: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Tenant secrets: the AWS KMS key (id, ARN or alias) that wraps each tenant's data key (GenerateDataKey, Decrypt; encryption context keel:tenant). Set by the CDK stack.",
    ),
} satisfies SettingsShape;

/** The settings the names in VAULT_ENV map to. */
export type VaultSettings = { keyFile: string } | { kmsKeyId: string };

/** The settings that turn the vault on, as the 503 and the refusals name them. */
export const VAULT_SETTING_NAMES = Object.keys(VAULT_ENV) as (keyof typeof VAULT_ENV)[];

/** Parsed VAULT_ENV values → the vault's settings, or undefined when neither is set. */
export function vaultSettings(values: {
  KEEL_VAULT_KEY_FILE?: string | undefined;
  KEEL_VAULT_KMS_KEY_ID?: string | undefined;
}): VaultSettings | undefined {
  const { KEEL_VAULT_KEY_FILE: keyFile, KEEL_VAULT_KMS_KEY_ID: kmsKeyId } = values;
  if (keyFile !== undefined && kmsKeyId !== undefined)
    throw new Error(
      "KEEL_VAULT_KEY_FILE and KEEL_VAULT_KMS_KEY_ID are both set: set one (data keys are wrapped by one)",
    );
  if (keyFile !== undefined) return { keyFile };
  if (kmsKeyId !== undefined) return { kmsKeyId };
  return undefined;
}

/**
 * The local key file's key; throws naming the setting (never the file's content) when it is not
 * 32 bytes of base64.
 */
function readVaultKeyFile(path: string): Buffer {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new Error(
      `KEEL_VAULT_KEY_FILE ${path} cannot be read${typeof code === "string" ? ` (${code})` : ""}`,
    );
  }
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, "base64");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) || key.length !== DATA_KEY_BYTES)
    throw new Error(
      `KEEL_VAULT_KEY_FILE ${path} must hold ${DATA_KEY_BYTES} random bytes in base64 (head -c ${DATA_KEY_BYTES} /dev/urandom | base64)`,
    );
  return key;
}

/** The key wrapper the settings name (reads the key file now: a bad one stops the process at start). */
export function keyWrapperOf(settings: VaultSettings, kms?: KMSClient): KeyWrapper {
  if ("keyFile" in settings) return new LocalKeyWrapper(readVaultKeyFile(settings.keyFile));
  // Region and credentials: the process's own (AWS_REGION, its role); AWS_ENDPOINT_URL_KMS is honoured.
  return new KmsKeyWrapper(kms ?? new KMSClient({}), settings.kmsKeyId);
}
