/**
 * SeaweedFS in its distributed form: a master, three volume servers on one rack with replication
 * `001` (two copies on two servers), and one filer with its S3 gateway. Three volume servers, not
 * two: with `001`, a volume that lost a copy becomes read-only and new volumes need two live
 * servers, so with two servers the loss of one would stop every write. One filer: Keel's
 * conditional writes (`If-None-Match: *`) are atomic within one filer.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { waitForPort } from "../../src/cli/devstack/ports";
import { waitUntilServing } from "../../src/cli/devstack/s3-server";
import { type ServiceProcess, startServiceProcess } from "../../src/cli/devstack/service-process";
import { toolPaths } from "../../src/cli/devstack/tools";
import type { S3Settings } from "../../src/store/s3-config";
import {
  clusterDir,
  S3_ACCESS_KEY_ID,
  S3_BUCKET,
  S3_SECRET_ACCESS_KEY,
  SEAWEED_FILER,
  SEAWEED_MASTER,
  SEAWEED_S3,
  SEAWEED_VOLUMES,
} from "./layout";
import { type ClusterPart, httpOk, startPart, waitUntil } from "./parts";

const seaweedDir = join(clusterDir, "seaweedfs");
const START_TIMEOUT_MS = 60_000;
const MASTER = `127.0.0.1:${SEAWEED_MASTER.http}`;

/** How Keel's workers and API reach the S3 gateway. */
export const clusterS3Settings: S3Settings = {
  bucket: S3_BUCKET,
  prefix: "",
  region: "us-east-1",
  endpoint: `http://127.0.0.1:${SEAWEED_S3.http}`,
  forcePathStyle: true,
  accessKeyId: S3_ACCESS_KEY_ID,
  secretAccessKey: S3_SECRET_ACCESS_KEY,
  checksums: "when_required",
};

function startWeed(name: string, args: string[], port: number): Promise<ServiceProcess> {
  const process = startServiceProcess(`seaweedfs-${name}`, toolPaths().weed, args, {
    logFile: join(seaweedDir, `${name}.log`),
  });
  return waitForPort(port, START_TIMEOUT_MS, process.isAlive).then(
    () => process,
    async (error) => {
      await process.stop();
      throw new Error(
        `seaweedfs ${name} did not start (${(error as Error).message}); see ${process.logFile}`,
      );
    },
  );
}

/** Data nodes the master knows (its topology), from `/dir/status`. */
async function dataNodeCount(): Promise<number> {
  const response = await fetch(`http://${MASTER}/dir/status`, { signal: AbortSignal.timeout(5_000) });
  const text = await response.text();
  return (text.match(/"Url":/g) ?? []).length;
}

const volumeArgs = (volume: (typeof SEAWEED_VOLUMES)[number]) => [
  "volume",
  "-ip=127.0.0.1",
  "-ip.bind=127.0.0.1",
  `-port=${volume.http}`,
  `-port.grpc=${volume.grpc}`,
  `-dir=${join(seaweedDir, volume.name)}`,
  // Room for regrowth on two servers after one is lost (the default 8 slots can run out).
  "-max=50",
  `-master=${MASTER}`,
  "-dataCenter=dc1",
  "-rack=rack1",
  `-metricsPort=${volume.metrics}`,
  "-preStopSeconds=1",
];

/** Master, three volume servers, filer + S3 gateway, each checked before the next; then the bucket. */
export async function startSeaweedfs(): Promise<ClusterPart[]> {
  for (const folder of ["master", "filer", ...SEAWEED_VOLUMES.map(({ name }) => name)]) {
    mkdirSync(join(seaweedDir, folder), { recursive: true });
  }
  const s3Config = join(seaweedDir, "s3.json");
  writeFileSync(
    s3Config,
    JSON.stringify({
      identities: [
        {
          name: "keel",
          credentials: [{ accessKey: S3_ACCESS_KEY_ID, secretKey: S3_SECRET_ACCESS_KEY }],
          actions: ["Admin", "Read", "List", "Tagging", "Write"],
        },
      ],
    }),
  );
  const parts: ClusterPart[] = [];
  try {
    parts.push(
      await startPart("seaweedfs-master", "seaweedfs", async () => {
        const process = await startWeed(
          "master",
          [
            "master",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            `-port=${SEAWEED_MASTER.http}`,
            `-port.grpc=${SEAWEED_MASTER.grpc}`,
            `-mdir=${join(seaweedDir, "master")}`,
            "-peers=none",
            "-defaultReplication=001",
            "-volumeSizeLimitMB=256",
            "-telemetry=false",
            `-metricsPort=${SEAWEED_MASTER.metrics}`,
          ],
          SEAWEED_MASTER.http,
        );
        await waitUntil("seaweedfs master leader", () => httpOk(`http://${MASTER}/cluster/status`), {
          timeoutMs: START_TIMEOUT_MS,
          isAlive: process.isAlive,
        });
        return process;
      }),
    );
    for (const volume of SEAWEED_VOLUMES) {
      parts.push(
        await startPart(`seaweedfs-${volume.name}`, "seaweedfs", () =>
          startWeed(volume.name, volumeArgs(volume), volume.http),
        ),
      );
    }
    await waitUntil(
      "three seaweedfs volume servers registered",
      async () => (await dataNodeCount()) >= SEAWEED_VOLUMES.length,
      { timeoutMs: START_TIMEOUT_MS },
    );
    parts.push(
      await startPart("seaweedfs-filer", "seaweedfs", async () => {
        const process = await startWeed(
          "filer",
          [
            "filer",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            `-port=${SEAWEED_FILER.http}`,
            `-port.grpc=${SEAWEED_FILER.grpc}`,
            `-master=${MASTER}`,
            `-defaultStoreDir=${join(seaweedDir, "filer")}`,
            `-metricsPort=${SEAWEED_FILER.metrics}`,
            "-s3",
            `-s3.port=${SEAWEED_S3.http}`,
            `-s3.port.grpc=${SEAWEED_S3.grpc}`,
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            `-s3.metricsPort=${SEAWEED_S3.metrics}`,
            `-s3.config=${s3Config}`,
          ],
          SEAWEED_S3.http,
        );
        // Creates the bucket, then writes, reads and deletes an object through the gateway.
        await waitUntilServing(clusterS3Settings, START_TIMEOUT_MS, () => {
          if (!process.isAlive()) throw new Error(`seaweedfs filer exited; see ${process.logFile}`);
        });
        return process;
      }),
    );
  } catch (error) {
    await Promise.all(parts.map((part) => part.current().stop()));
    throw error;
  }
  return parts;
}
