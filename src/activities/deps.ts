/** What activities need from the worker process: created once per process, shared by every call. */
import type { ModelCatalog } from "../providers/models";
import type { Provider } from "../providers/types";
import type { SessionStore } from "../store/session-store";
import type { ToolCallMarkers } from "../store/tool-call-markers";
import type { WorkspaceSnapshots } from "../store/workspace-snapshots";
import type { SandboxConfig } from "../tools/sandbox";

export interface ActivityDeps {
  store: SessionStore;
  markers: ToolCallMarkers;
  provider: Provider;
  catalog: ModelCatalog;
  /** Folder holding one workspace per session on this worker. */
  workspaceRoot: string;
  /** This worker's own task queue: tool activities of sessions it holds go there. */
  workerTaskQueue: string;
  /** Workspace snapshots in S3 (snapshot after tool batches, restore anywhere). */
  snapshots: WorkspaceSnapshots;
  /** Largest workspace (bytes of files) a snapshot records. */
  snapshotMaxBytes: number;
  /** Isolation and limits of the processes tools start (checked at worker start). */
  sandbox: SandboxConfig;
  /** Publish live events (deltas, tool output so far) to the run's stream; default on. */
  liveEvents?: boolean;
}
