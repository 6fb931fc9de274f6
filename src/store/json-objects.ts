/**
 * Small JSON objects the API keeps in S3 beside the sessions (idempotency records, chat thread
 * mappings): conditional create, read with a schema, conditional replace, overwrite, remove.
 */
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { z } from "zod";
import { ConditionalObjects } from "./conditional-objects";
import { isNotFound } from "./s3-requests";

const JSON_CONTENT_TYPE = "application/json";

export class JsonObjects {
  private readonly conditional: ConditionalObjects;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    /** Key prefix (the deployment's S3 prefix), used verbatim. */
    readonly prefix: string,
  ) {
    this.conditional = new ConditionalObjects(s3, bucket);
  }

  /** Writes `value` unless an object exists at `key`: true when written. */
  createIfAbsent(key: string, value: unknown): Promise<boolean> {
    return this.conditional.createIfAbsent(key, JSON.stringify(value), JSON_CONTENT_TYPE);
  }

  /** The object at `key` parsed with `schema`; undefined when absent. Throws when malformed. */
  async read<T>(key: string, schema: z.ZodType<T>): Promise<T | undefined> {
    return (await this.readVersioned(key, schema))?.value;
  }

  /**
   * `read` plus the version read (its ETag), for a `replaceIfMatch` that must not overwrite a
   * change made since. Undefined when absent; throws when malformed.
   */
  async readVersioned<T>(key: string, schema: z.ZodType<T>): Promise<{ value: T; etag: string } | undefined> {
    let text: string;
    let etag: string | undefined;
    try {
      const response = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      text = (await response.Body?.transformToString("utf-8")) ?? "";
      etag = response.ETag;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
    if (etag === undefined) throw new Error(`S3 answered the read of ${key} without an ETag`);
    return { value: schema.parse(JSON.parse(text)), etag };
  }

  /** Replaces the object at `key` if it is still the version `etag` names: true when replaced. */
  replaceIfMatch(key: string, value: unknown, etag: string): Promise<boolean> {
    return this.conditional.replaceIfMatch(key, JSON.stringify(value), JSON_CONTENT_TYPE, etag);
  }

  async overwrite(key: string, value: unknown): Promise<void> {
    await this.s3.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: JSON.stringify(value),
        ContentType: JSON_CONTENT_TYPE,
      }),
    );
  }

  async remove(key: string): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }
}
