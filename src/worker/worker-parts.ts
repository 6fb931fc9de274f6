/** What every Keel worker is built from, long-running or on Lambda. */
import type { S3Client } from "@aws-sdk/client-s3";
import { createActivities } from "../activities";
import type { KeelActivities } from "../activities/types";
import { loadCatalog } from "../providers/models";
import { createProvider } from "../providers/registry";
import { EntryCache } from "../store/entry-cache";
import { keelDataConverter } from "../store/payload-storage";
import { SessionStore } from "../store/session-store";
import { ToolCallMarkers } from "../store/tool-call-markers";
import type { WorkerConfig } from "./config";

/** The activities over one S3 client; tool calls of sessions this worker holds go to `toolTaskQueue`. */
export function workerActivities(config: WorkerConfig, s3: S3Client, toolTaskQueue: string): KeelActivities {
  return createActivities({
    store: new SessionStore(s3, config.s3, { cache: new EntryCache() }),
    markers: new ToolCallMarkers(s3, config.s3),
    provider: createProvider(config.providers),
    catalog: loadCatalog(),
    workspaceRoot: config.workspaceRoot,
    workerTaskQueue: toolTaskQueue,
  });
}

/** Worker options every Keel worker shares. */
export function commonWorkerOptions(config: WorkerConfig, s3: S3Client) {
  return {
    dataConverter: keelDataConverter(s3, config.s3),
    // Cancellation reaches an activity with its next heartbeat: send them often enough that an
    // abort lands within a couple of seconds.
    defaultHeartbeatThrottleInterval: "1 second",
    maxHeartbeatThrottleInterval: "2 seconds",
  } as const;
}
