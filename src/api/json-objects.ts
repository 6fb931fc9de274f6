/**
 * Small JSON objects the API keeps in S3 beside the sessions (idempotency records, chat thread
 * mappings): conditional create, read with a schema, overwrite, remove.
 */
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { z } from "zod";

export function s3HttpStatus(error: unknown): number | undefined {
  const metadata = (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata;
  return metadata?.httpStatusCode;
}

export class JsonObjects {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    /** Key prefix (the deployment's S3 prefix), used verbatim. */
    readonly prefix: string,
  ) {}

  /** Writes `value` unless an object exists at `key`: true when written. */
  async createIfAbsent(key: string, value: unknown): Promise<boolean> {
    try {
      await this.put(key, value, true);
      return true;
    } catch (error) {
      const status = s3HttpStatus(error);
      // 412: an object exists. 409: a concurrent conditional write on the same key; it wins.
      if (status === 412 || status === 409) return false;
      throw error;
    }
  }

  /** The object at `key` parsed with `schema`; undefined when absent. Throws when malformed. */
  async read<T>(key: string, schema: z.ZodType<T>): Promise<T | undefined> {
    let text: string;
    try {
      const response = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      text = (await response.Body?.transformToString("utf-8")) ?? "";
    } catch (error) {
      if (s3HttpStatus(error) === 404) return undefined;
      throw error;
    }
    return schema.parse(JSON.parse(text));
  }

  async overwrite(key: string, value: unknown): Promise<void> {
    await this.put(key, value, false);
  }

  async remove(key: string): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  private async put(key: string, value: unknown, ifAbsent: boolean): Promise<void> {
    await this.s3.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: JSON.stringify(value),
        ContentType: "application/json",
        ...(ifAbsent ? { IfNoneMatch: "*" } : {}),
      }),
    );
  }
}
