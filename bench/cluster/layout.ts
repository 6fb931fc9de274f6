/**
 * Where every part of the local cluster lives: fixed loopback ports (below Linux's ephemeral range,
 * 32768+, so they never collide with the dev stack's and the tests' picked ports), the data folder
 * (`.keel/cluster`, or KEEL_CLUSTER_DIR), the namespace, the bucket and the local-only credentials.
 * Fixed ports make a restart of one part (a fault run) come back where its clients look for it.
 */
import { join } from "node:path";
import { projectRoot } from "../../src/cli/devstack/tools";

export const clusterDir = process.env.KEEL_CLUSTER_DIR ?? join(projectRoot, ".keel/cluster");

export const POSTGRES_PORT = 15432;
/** The database user Temporal's services and the SQL tool connect as (trust auth, loopback only). */
export const POSTGRES_TEMPORAL_USER = "temporal";

/** One Temporal service process: its gRPC, membership (ringpop) and Prometheus metrics ports. */
export interface TemporalServicePorts {
  grpc: number;
  membership: number;
  metrics: number;
}

export type TemporalServiceName = "frontend" | "history" | "matching" | "worker";

export interface TemporalServiceInstance {
  /** `history-1`, `frontend`, …: names its log file and its row in the results. */
  name: string;
  service: TemporalServiceName;
  ports: TemporalServicePorts;
}

/**
 * Two history and two matching processes, so losing one leaves a survivor that takes over its
 * shards and task-queue partitions, as in production; one frontend and one worker service.
 * Started in this order: history owns the shards the others route to.
 */
export const TEMPORAL_SERVICES: TemporalServiceInstance[] = [
  { name: "history-1", service: "history", ports: { grpc: 17234, membership: 16934, metrics: 19091 } },
  { name: "history-2", service: "history", ports: { grpc: 17244, membership: 16944, metrics: 19094 } },
  { name: "matching-1", service: "matching", ports: { grpc: 17235, membership: 16935, metrics: 19092 } },
  { name: "matching-2", service: "matching", ports: { grpc: 17245, membership: 16945, metrics: 19095 } },
  { name: "frontend", service: "frontend", ports: { grpc: 17233, membership: 16933, metrics: 19090 } },
  { name: "worker", service: "worker", ports: { grpc: 17239, membership: 16939, metrics: 19093 } },
];
export const TEMPORAL_FRONTEND_HTTP_PORT = 17243;
export const TEMPORAL_ADDRESS = "127.0.0.1:17233";
/** The frontend's Prometheus endpoint: Temporal's `action` counter is emitted there. */
export const TEMPORAL_FRONTEND_METRICS_URL = "http://127.0.0.1:19090/metrics";
/** Fixed for the life of the database (stored in its cluster metadata at first start). */
export const TEMPORAL_HISTORY_SHARDS = 16;
export const TEMPORAL_NAMESPACE = "keel";
export const TEMPORAL_NAMESPACE_RETENTION = "72h";

export const SEAWEED_MASTER = { http: 19333, grpc: 29333, metrics: 19340 };
export const SEAWEED_VOLUMES = [1, 2, 3].map((index) => ({
  name: `volume-${index}`,
  http: 18080 + index,
  grpc: 28080 + index,
  metrics: 19340 + index,
}));
export const SEAWEED_FILER = { http: 18888, grpc: 28888, metrics: 19345 };
export const SEAWEED_S3 = { http: 18333, grpc: 28333, metrics: 19346 };
export const S3_BUCKET = "keel-cluster";
/** Local-only S3 identity (loopback only: not a secret). */
export const S3_ACCESS_KEY_ID = "keel-local";
export const S3_SECRET_ACCESS_KEY = "keel-local-secret";

/** The one address clients use: nginx in front of the API processes. */
export const API_PROXY_PORT = 18787;
export const API_PORTS = [18788, 18789];
export const LLM_PORT = 18790;
export const TASK_QUEUE = "keel";
export const WORKER_COUNT = 3;
export const RUNNER_COUNT = 2;
/** The runners' environment (tenant `runner-tenant`'s default, so its tools go to them). */
export const RUNNER_ENVIRONMENT = "cluster-runners";

/** Tenants with an API key each (loopback only: not secrets). */
export const TENANT_KEYS = {
  load: "keel-cluster-load-key",
  runners: "keel-cluster-runners-key",
} as const;

/**
 * What the local LLM server answers like by default: the first token after about a second, then
 * streaming at a hosted model's pace.
 */
export const LLM_LATENCY_MS = 1_000;
export const LLM_TOKENS_PER_SECOND = 40;

export function allFixedPorts(): number[] {
  return [
    POSTGRES_PORT,
    ...TEMPORAL_SERVICES.flatMap(({ ports }) => [ports.grpc, ports.membership, ports.metrics]),
    TEMPORAL_FRONTEND_HTTP_PORT,
    ...Object.values(SEAWEED_MASTER),
    ...SEAWEED_VOLUMES.flatMap(({ http, grpc, metrics }) => [http, grpc, metrics]),
    ...Object.values(SEAWEED_FILER),
    ...Object.values(SEAWEED_S3),
    API_PROXY_PORT,
    ...API_PORTS,
    LLM_PORT,
  ];
}
