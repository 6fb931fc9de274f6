/**
 * Conditional S3 writes, with one behaviour for every caller (session store, tool-call markers,
 * workspace snapshots, the API's JSON objects):
 *
 * - create-if-absent (`If-None-Match: *`): 412 means an object is there (false). 409
 *   `ConditionalRequestConflict` means a concurrent conditional write on the same key is still in
 *   flight (AWS S3 says so; SeaweedFS answers such races with 412 instead); it is retried with
 *   backoff until the server decides, since the other write may still fail and leave the key free.
 * - read-after-conflict: the winning write of a 412 may not be readable yet on some
 *   S3-compatible servers; the read is retried briefly.
 * - replace-if-match (`If-Match: <etag>`): overwrites only the version the caller read; a key
 *   removed since is refused too (412 or 404).
 *
 * Other S3 errors are passed on unchanged.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { PutObjectCommand, type PutObjectCommandInput, type S3Client } from "@aws-sdk/client-s3";
import { s3HttpStatus } from "./s3-requests";

/** Attempts of a conditional write that S3 answers with 409 (a concurrent write in flight). */
const CONFLICT_ATTEMPTS = 5;
/** Attempts to read an object a 412 said exists. */
const READ_AFTER_CONFLICT_ATTEMPTS = 5;
const RETRY_BASE_DELAY_MS = 50;

/** What a conditional write stores (a Buffer is a Uint8Array). */
export type ObjectBody = string | Uint8Array;

export class ConditionalObjects {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  /** Creates the object at `key` unless one exists: true when written, false when one was there. */
  createIfAbsent(key: string, body: ObjectBody, contentType: string): Promise<boolean> {
    return this.conditionalPut({ Key: key, Body: body, ContentType: contentType, IfNoneMatch: "*" }).then(
      (written) => written !== undefined,
    );
  }

  /**
   * Replaces the object at `key` if it is still the version with `etag` (as read): true when
   * replaced, false when it changed or was removed since. The API's takeover of a stale
   * idempotency claim goes through this, so two retries never both take one claim over.
   */
  replaceIfMatch(key: string, body: ObjectBody, contentType: string, etag: string): Promise<boolean> {
    return this.conditionalPut({ Key: key, Body: body, ContentType: contentType, IfMatch: etag }).then(
      (written) => written !== undefined,
    );
  }

  /**
   * Writes the object at `key` if it is still the version the caller holds: `expected` is the
   * ETag it read, `absent` for none, or `any` (no condition). Resolves to the new version's ETag,
   * or undefined when the object changed (or appeared, or was removed) since.
   */
  async writeIfVersion(
    key: string,
    body: ObjectBody,
    contentType: string,
    expected: string | "absent" | "any",
  ): Promise<string | undefined> {
    const precondition =
      expected === "any" ? {} : expected === "absent" ? { IfNoneMatch: "*" } : { IfMatch: expected };
    const written = await this.conditionalPut({
      Key: key,
      Body: body,
      ContentType: contentType,
      ...precondition,
    });
    if (written === undefined) return undefined;
    if (!written.etag) throw new Error(`S3 stored ${key} without answering its ETag`);
    return written.etag;
  }

  /**
   * A put whose precondition failing (412) is an answer (undefined), not an error; resolves to
   * what S3 answered of the written version.
   */
  private async conditionalPut(
    input: Omit<PutObjectCommandInput, "Bucket">,
  ): Promise<{ etag: string | undefined } | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        const written = await this.client.send(new PutObjectCommand({ ...input, Bucket: this.bucket }));
        return { etag: written.ETag };
      } catch (error) {
        const status = s3HttpStatus(error);
        if (status === 412) return undefined;
        // AWS S3 answers an If-Match write to a key that no longer exists with 404 (SeaweedFS with
        // 412): either way the version read is gone.
        if (status === 404 && input.IfMatch !== undefined) return undefined;
        if (status === 409 && attempt < CONFLICT_ATTEMPTS) {
          await sleep(RETRY_BASE_DELAY_MS * 2 ** (attempt - 1));
          continue;
        }
        throw error;
      }
    }
  }
}

/**
 * Reads an object that a refused create said exists, giving the winning write a moment to become
 * visible: `read` (undefined when absent) is retried with backoff; undefined if it never appears.
 */
export async function readAfterConflict<T>(read: () => Promise<T | undefined>): Promise<T | undefined> {
  for (let attempt = 1; attempt <= READ_AFTER_CONFLICT_ATTEMPTS; attempt++) {
    const value = await read();
    if (value !== undefined) return value;
    if (attempt < READ_AFTER_CONFLICT_ATTEMPTS) await sleep(RETRY_BASE_DELAY_MS * 2 ** (attempt - 1));
  }
  return undefined;
}
