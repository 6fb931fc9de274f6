/**
 * SeaweedFS (`weed mini`) as the local S3-compatible server: one process, bound to loopback,
 * telemetry off, with atomic conditional writes (`If-None-Match: *`, `If-Match`).
 */

import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { createS3Client, type S3Settings } from "../../store/s3-config";
import { exitedBeforeListening, freePorts, startOnFreePorts, waitForPort } from "./ports";
import { type ServiceProcess, startServiceProcess } from "./service-process";
import { toolPaths } from "./tools";

export interface S3DevServer {
  settings: S3Settings;
  process: ServiceProcess;
  /** Every port it listens on: passed back with the same data folder, it restarts as it was. */
  ports: S3DevServerPorts;
}

/** The ports of `weed mini`'s components (S3, master, volume, filer, WebDAV, admin, metrics). */
interface S3DevServerPorts {
  s3: number;
  s3Grpc: number;
  master: number;
  masterGrpc: number;
  volume: number;
  volumeGrpc: number;
  filer: number;
  filerGrpc: number;
  webdav: number;
  admin: number;
  adminGrpc: number;
  metrics: number;
}

export interface S3DevServerOptions {
  dataDir: string;
  bucket: string;
  port?: number;
  /** All ports at once (a restart on the same data folder); wins over `port`. */
  ports?: S3DevServerPorts;
  accessKeyId?: string;
  secretAccessKey?: string;
}

/** Local-only credentials of the dev server (not a secret: it listens on loopback only). */
export const LOCAL_ACCESS_KEY_ID = "keel-local";
export const LOCAL_SECRET_ACCESS_KEY = "keel-local-secret";

/** The given ports, or twelve free ones (`port`, when given, as the S3 port). */
async function s3DevServerPorts(options: S3DevServerOptions): Promise<S3DevServerPorts> {
  if (options.ports) return options.ports;
  // weed mini runs master, volume, filer, S3 and WebDAV servers; each gets its own port (and a
  // gRPC port) so that several stacks (dev + tests) can run side by side.
  const free = await freePorts(12);
  const at = (index: number) => free[index] as number;
  return {
    s3: options.port ?? at(0),
    s3Grpc: at(1),
    master: at(2),
    masterGrpc: at(3),
    volume: at(4),
    volumeGrpc: at(5),
    filer: at(6),
    filerGrpc: at(7),
    webdav: at(8),
    admin: at(9),
    adminGrpc: at(10),
    metrics: at(11),
  };
}

export function startS3DevServer(options: S3DevServerOptions): Promise<S3DevServer> {
  const fixed = options.ports !== undefined || options.port !== undefined;
  return startOnFreePorts(fixed, () => startS3DevServerOnce(options));
}

async function startS3DevServerOnce(options: S3DevServerOptions): Promise<S3DevServer> {
  const ports = await s3DevServerPorts(options);
  const {
    s3: s3Port,
    s3Grpc,
    master,
    masterGrpc,
    volume,
    volumeGrpc,
    filer,
    filerGrpc,
    webdav,
    admin,
    adminGrpc,
    metrics,
  } = ports;
  const accessKeyId = options.accessKeyId ?? LOCAL_ACCESS_KEY_ID;
  const secretAccessKey = options.secretAccessKey ?? LOCAL_SECRET_ACCESS_KEY;
  const args = [
    "mini",
    `-dir=${options.dataDir}`,
    "-ip=127.0.0.1",
    "-ip.bind=127.0.0.1",
    `-s3.port=${s3Port}`,
    `-s3.port.grpc=${s3Grpc}`,
    "-s3.port.iceberg=0",
    "-s3.port.lance=0",
    `-master.port=${master}`,
    `-master.port.grpc=${masterGrpc}`,
    "-master.telemetry=false",
    `-volume.port=${volume}`,
    `-volume.port.grpc=${volumeGrpc}`,
    `-filer.port=${filer}`,
    `-filer.port.grpc=${filerGrpc}`,
    `-webdav.port=${webdav}`,
    `-admin.port=${admin}`,
    `-admin.port.grpc=${adminGrpc}`,
    "-admin.ui=false",
    `-metricsPort=${metrics}`,
  ];
  const process = startServiceProcess("s3", toolPaths().weed, args, {
    logFile: join(options.dataDir, "seaweedfs.log"),
    // weed mini takes the S3 identity from these variables.
    env: {
      PATH: globalThis.process.env.PATH,
      AWS_ACCESS_KEY_ID: accessKeyId,
      AWS_SECRET_ACCESS_KEY: secretAccessKey,
    },
  });
  const settings: S3Settings = {
    bucket: options.bucket,
    prefix: "",
    region: "us-east-1",
    endpoint: `http://127.0.0.1:${s3Port}`,
    forcePathStyle: true,
    accessKeyId,
    secretAccessKey,
    checksums: "when_required",
  };
  try {
    await waitForPort(s3Port, 60_000, process.isAlive);
    await waitUntilServing(settings, 60_000, () => {
      // Something else answers on the port (it took the port before weed bound it, and weed exited).
      if (!process.isAlive()) throw exitedBeforeListening(s3Port);
    });
  } catch (error) {
    await process.stop();
    throw new Error(`S3 server did not start (${(error as Error).message}); see ${process.logFile}`);
  }
  return { settings, process, ports };
}

/**
 * Waits until the server has created the bucket and can write an object and read it back,
 * retrying every 250 ms for up to `timeoutMs` (then the last error is thrown). The bucket answers
 * as soon as the filer is up, but objects live on the volume server, which registers with the
 * master a moment later: until then (most visible on a restart over existing data) reads fail
 * with `InternalError`.
 */
export async function waitUntilServing(
  settings: S3Settings,
  timeoutMs: number,
  checkAlive: () => void,
): Promise<void> {
  const client = createS3Client(settings);
  const Bucket = settings.bucket;
  const Key = ".keel-ready-probe";
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      try {
        await client
          .send(new HeadBucketCommand({ Bucket }))
          .catch(() => client.send(new CreateBucketCommand({ Bucket })));
        await client.send(new PutObjectCommand({ Bucket, Key, Body: "ready" }));
        const read = await client.send(new GetObjectCommand({ Bucket, Key }));
        await read.Body?.transformToString();
        await client.send(new DeleteObjectCommand({ Bucket, Key }));
        return;
      } catch (error) {
        checkAlive();
        if (Date.now() > deadline) throw error;
        await sleep(250);
      }
    }
  } finally {
    client.destroy();
  }
}
