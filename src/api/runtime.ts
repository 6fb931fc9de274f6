/** Builds the app's dependencies from configuration (shared by the Lambda and the Node server). */

import { EnvironmentStore } from "../environments/store";
import { EvalStore } from "../evals/eval-store";
import { loadCatalog } from "../providers/models";
import { JsonObjects } from "../store/json-objects";
import { McpToolListings } from "../store/mcp-tool-listings";
import { keelDataConverter } from "../store/payload-storage";
import { createS3Client } from "../store/s3-config";
import { SessionStore } from "../store/session-store";
import { ToolCallMarkers } from "../store/tool-call-markers";
import { WorkspaceSnapshots } from "../store/workspace-snapshots";
import { startTelemetry, type Telemetry } from "../telemetry/sdk";
import { createVault } from "../tenants/secrets";
import { WebhookStore } from "../tenants/webhooks";
import { type ApiApp, createApp } from "./app";
import type { ApiConfig } from "./config";
import { LazyRunClient } from "./temporal";
import { tenantServices } from "./tenant-runs";

export interface ApiRuntime {
  app: ApiApp;
  /** Started when KEEL_OTEL_ENDPOINT is set; the Lambda flushes it before each response. */
  telemetry: Telemetry | undefined;
  close(): Promise<void>;
}

/** The app over its dependencies; starts telemetry first when the configuration turns it on. */
export function createApiRuntime(config: ApiConfig): ApiRuntime {
  const telemetry = config.telemetry ? startTelemetry(config.telemetry) : undefined;
  const s3 = createS3Client(config.s3);
  const store = new SessionStore(s3, config.s3);
  const temporal = new LazyRunClient(
    config.temporal,
    config.taskQueue,
    keelDataConverter(s3, config.s3),
    config.viewer.publicUrl,
  );
  const vault = createVault(config.vault, s3, config.s3);
  const app = createApp({
    config,
    ...(vault ? { vault, webhooks: new WebhookStore(s3, config.s3, vault) } : {}),
    runs: () => temporal.get(),
    onFailure: (error) => temporal.reportFailure(error),
    store,
    snapshots: new WorkspaceSnapshots(s3, config.s3),
    objects: new JsonObjects(s3, config.s3.bucket, config.s3.prefix),
    evals: new EvalStore(s3, config.s3.bucket, config.s3.prefix),
    catalog: loadCatalog(config.modelsFile ? { modelsFile: config.modelsFile } : {}),
    tenants: tenantServices(s3, config.s3, () => temporal.get()),
    environments: {
      store: new EnvironmentStore(s3, config.s3.bucket, config.s3.prefix),
      markers: new ToolCallMarkers(s3, config.s3),
      mcpListings: new McpToolListings(s3, config.s3),
    },
  });
  return {
    app,
    telemetry,
    async close() {
      await temporal.close();
      s3.destroy();
      await telemetry?.shutdown();
    },
  };
}
