/**
 * What protects a tenant's data key at rest (docs/tools.md, "Secrets"): a key wrapper makes a new
 * data key (its plaintext, used in this process only, and its wrapped form, the one stored) and
 * unwraps a stored one. Two wrappers: a local key file (`KEEL_VAULT_KEY_FILE`, `keel dev`) and
 * AWS KMS (`KEEL_VAULT_KMS_KEY_ID`, the CDK deployment). Either binds the wrapped key to its
 * tenant, so a data key copied into another tenant's folder does not unwrap there.
 */
import { randomBytes } from "node:crypto";
import { DecryptCommand, GenerateDataKeyCommand, type KMSClient } from "@aws-sdk/client-kms";
import { DATA_KEY_BYTES, open, seal } from "./crypto";

/** Which wrapper wrapped a stored data key (kept beside it: a mismatch is refused, naming both). */
type KeyWrapperKind = "local-file" | "aws-kms";

/** A data key: the plaintext (never stored, never logged) and its wrapped form (base64, stored). */
export interface DataKey {
  plaintext: Buffer;
  wrapped: string;
}

export interface KeyWrapper {
  readonly kind: KeyWrapperKind;
  /** A new 32-byte data key for `tenantId`, wrapped. */
  newDataKey(tenantId: string): Promise<DataKey>;
  /** The plaintext of `wrapped`; throws when it was wrapped for another tenant or another key. */
  unwrap(tenantId: string, wrapped: string): Promise<Buffer>;
}

/** The additional data a local wrapping binds: the tenant the data key belongs to. */
function wrappingContext(tenantId: string): Buffer {
  return Buffer.from(`keel-vault-data-key\0${tenantId}`, "utf8");
}

/** The local key file's key: 32 bytes, AES-256-GCM over each tenant's data key. */
export class LocalKeyWrapper implements KeyWrapper {
  readonly kind = "local-file";
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== DATA_KEY_BYTES) throw new Error(`a vault key is ${DATA_KEY_BYTES} bytes`);
    this.key = Buffer.from(key);
  }

  async newDataKey(tenantId: string): Promise<DataKey> {
    const plaintext = randomBytes(DATA_KEY_BYTES);
    return { plaintext, wrapped: seal(this.key, plaintext, wrappingContext(tenantId)).toString("base64") };
  }

  async unwrap(tenantId: string, wrapped: string): Promise<Buffer> {
    const plaintext = open(this.key, Buffer.from(wrapped, "base64"), wrappingContext(tenantId));
    if (plaintext.length !== DATA_KEY_BYTES) throw new Error("the unwrapped data key has the wrong length");
    return plaintext;
  }
}

/** KMS's encryption context of a tenant's data key: KMS refuses to decrypt it under any other. */
function kmsEncryptionContext(tenantId: string): Record<string, string> {
  return { "keel:tenant": tenantId };
}

/** AWS KMS: GenerateDataKey and Decrypt under one key, the tenant in the encryption context. */
export class KmsKeyWrapper implements KeyWrapper {
  readonly kind = "aws-kms";

  constructor(
    private readonly kms: KMSClient,
    /** Key id, ARN or alias (`alias/keel-vault`). */
    private readonly keyId: string,
  ) {}

  async newDataKey(tenantId: string): Promise<DataKey> {
    const answer = await this.kms.send(
      new GenerateDataKeyCommand({
        KeyId: this.keyId,
        KeySpec: "AES_256",
        EncryptionContext: kmsEncryptionContext(tenantId),
      }),
    );
    if (!answer.Plaintext || !answer.CiphertextBlob)
      throw new Error("KMS answered GenerateDataKey without a key");
    const plaintext = Buffer.from(answer.Plaintext);
    answer.Plaintext.fill(0);
    if (plaintext.length !== DATA_KEY_BYTES) throw new Error("KMS made a data key of the wrong length");
    return { plaintext, wrapped: Buffer.from(answer.CiphertextBlob).toString("base64") };
  }

  async unwrap(tenantId: string, wrapped: string): Promise<Buffer> {
    const answer = await this.kms.send(
      new DecryptCommand({
        KeyId: this.keyId,
        CiphertextBlob: Buffer.from(wrapped, "base64"),
        EncryptionContext: kmsEncryptionContext(tenantId),
      }),
    );
    if (!answer.Plaintext) throw new Error("KMS answered Decrypt without a key");
    const plaintext = Buffer.from(answer.Plaintext);
    answer.Plaintext.fill(0);
    if (plaintext.length !== DATA_KEY_BYTES) throw new Error("the unwrapped data key has the wrong length");
    return plaintext;
  }
}
