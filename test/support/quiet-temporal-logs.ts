// Temporal's SDK logs every worker state change at INFO; tests only want warnings and errors.
import { DefaultLogger, Runtime } from "@temporalio/worker";

Runtime.install({ logger: new DefaultLogger("WARN") });
