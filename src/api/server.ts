/**
 * Local Node server for the API: `tsx src/api/server.ts` (port `KEEL_API_PORT`, default 8787).
 * Same app as the Lambda handler.
 */
import { type ServerType, serve } from "@hono/node-server";
import type { ApiApp } from "./app";
import { apiConfigFromEnv } from "./config";
import { createApiRuntime } from "./runtime";

/** Serves `app` on `port` (0 = any free port); resolves with the server and its port. */
export function startApiServer(app: ApiApp, port: number): Promise<{ server: ServerType; port: number }> {
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, (info) =>
      resolve({ server, port: info.port }),
    );
  });
}

async function main(): Promise<void> {
  const config = apiConfigFromEnv();
  const runtime = createApiRuntime(config);
  const { server, port } = await startApiServer(runtime.app, config.port);
  process.stdout.write(`${JSON.stringify({ msg: "api started", port })}\n`);
  const shutdown = () => {
    server.close(() => {
      void runtime.close().finally(() => process.exit(0));
    });
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
