/**
 * What every S3 caller of Keel reads from an S3 answer the same way: an error's HTTP status,
 * "not found", and the objects under a prefix (through the SDK's paginator).
 */
import {
  type _Object,
  type ListObjectsV2CommandInput,
  paginateListObjectsV2,
  type S3Client,
} from "@aws-sdk/client-s3";

/** The HTTP status of an S3 error, if it has one. */
export function s3HttpStatus(error: unknown): number | undefined {
  const metadata = (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata;
  return metadata?.httpStatusCode;
}

/**
 * Whether an S3 error says the object does not exist: HTTP 404, or the `NoSuchKey` error name
 * (which some S3-compatible servers send without a status the SDK reads).
 */
export function isNotFound(error: unknown): boolean {
  return s3HttpStatus(error) === 404 || (error as { name?: unknown } | undefined)?.name === "NoSuchKey";
}

/**
 * Every object of a LIST (`input`'s bucket, prefix, `StartAfter`, …), page after page until S3
 * says there are no more, one request per page of `pageSize` keys (S3's default, 1000, unless
 * given). Errors are passed on unchanged.
 */
export async function* listObjects(
  client: S3Client,
  input: Omit<ListObjectsV2CommandInput, "ContinuationToken">,
  pageSize?: number,
): AsyncGenerator<_Object> {
  for await (const page of paginateListObjectsV2(
    { client, ...(pageSize ? { pageSize } : {}) },
    { ...input },
  )) {
    yield* page.Contents ?? [];
  }
}

/**
 * The keys under `folder` — or, with `delimiter`, the "folders" one level down (S3's common
 * prefixes, each ending in the delimiter) — page after page.
 */
export async function listKeys(
  client: S3Client,
  bucket: string,
  folder: string,
  delimiter?: string,
): Promise<string[]> {
  const keys: string[] = [];
  for await (const page of paginateListObjectsV2(
    { client },
    { Bucket: bucket, Prefix: folder, ...(delimiter ? { Delimiter: delimiter } : {}) },
  )) {
    if (delimiter) keys.push(...(page.CommonPrefixes ?? []).flatMap((p) => (p.Prefix ? [p.Prefix] : [])));
    else keys.push(...(page.Contents ?? []).flatMap((object) => (object.Key ? [object.Key] : [])));
  }
  return keys;
}
