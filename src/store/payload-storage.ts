/**
 * The safety net for Temporal payloads: any payload larger than the threshold (default 256 KiB)
 * is stored in S3 under `<prefix>payloads/` by Temporal's official S3 driver and replaced in
 * workflow history by a small reference. Keel's own activity inputs and results are small by
 * construction; this catches what is not (a huge pasted message, a long approval edit).
 */
import type { S3Client } from "@aws-sdk/client-s3";
import { type DataConverter, ExternalStorage } from "@temporalio/common";
import { S3StorageDriver, type S3StorageDriverClient } from "@temporalio/external-storage-s3";
import { AwsSdkS3StorageDriverClient } from "@temporalio/external-storage-s3-aws-sdk";
import type { S3Settings } from "./s3-config";

const DEFAULT_PAYLOAD_THRESHOLD_BYTES = 256 * 1024;
/** Under the configured prefix; the deployment's lifecycle rule expires objects here. */
export const PAYLOADS_FOLDER = "payloads/";

/** Prefixes every key the driver uses, so payloads live beside (not among) the sessions. */
function prefixedClient(inner: S3StorageDriverClient, prefix: string): S3StorageDriverClient {
  return {
    putObject: (bucket, key, data, options) => inner.putObject(bucket, prefix + key, data, options),
    objectExists: (bucket, key, options) => inner.objectExists(bucket, prefix + key, options),
    getObject: (bucket, key, options) => inner.getObject(bucket, prefix + key, options),
  };
}

/** The data converter every Keel client and worker uses: default conversion plus S3 offloading. */
export function keelDataConverter(
  client: S3Client,
  settings: S3Settings,
  payloadSizeThreshold = DEFAULT_PAYLOAD_THRESHOLD_BYTES,
): DataConverter {
  const driver = new S3StorageDriver({
    client: prefixedClient(new AwsSdkS3StorageDriverClient(client), `${settings.prefix}${PAYLOADS_FOLDER}`),
    bucket: settings.bucket,
  });
  return { externalStorage: new ExternalStorage({ drivers: [driver], payloadSizeThreshold }) };
}
