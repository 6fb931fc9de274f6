/**
 * AES-256-GCM as the vault uses it: a sealed box is nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes),
 * with additional data that must match at opening (what the box belongs to).
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/** Bytes of a data key and of the local key file's key. */
export const DATA_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** Encrypts `plaintext` under `key`, binding `aad`. */
export function seal(key: Buffer, plaintext: Buffer, aad: Buffer): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]);
}

/** Thrown when a box does not open: another key, other additional data, or altered bytes. */
class SealedBoxError extends Error {
  constructor(
    what = "the encrypted value does not open with this key and binding (altered, or not this one's)",
  ) {
    super(what);
    this.name = "SealedBoxError";
  }
}

/** The plaintext of `box`; throws SealedBoxError when the key, the additional data or a byte differs. */
export function open(key: Buffer, box: Buffer, aad: Buffer): Buffer {
  if (box.length < NONCE_BYTES + TAG_BYTES) throw new SealedBoxError("the encrypted value is too short");
  const nonce = box.subarray(0, NONCE_BYTES);
  const tag = box.subarray(box.length - TAG_BYTES);
  const decipher = createDecipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([
      decipher.update(box.subarray(NONCE_BYTES, box.length - TAG_BYTES)),
      decipher.final(),
    ]);
  } catch {
    throw new SealedBoxError();
  }
}
