/**
 * The sink a traced workflow reports its outcome through (types only: shared by the workflow
 * bundle and the worker). Sinks are not called while a workflow replays, so each run is counted
 * once, by the worker that ran its last task.
 */
import type { Sinks } from "@temporalio/workflow";

export interface KeelTelemetrySinks extends Sinks {
  keelTelemetry: {
    /** The workflow ended: its status (`completed`, `aborted`, ...), `continued_as_new` or `failed`. */
    runEnded(outcome: string): void;
  };
}
