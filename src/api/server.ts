/**
 * Local Node server for the API: `tsx src/api/server.ts` (port `KEEL_API_PORT`, default 8787).
 * Same app as the Lambda handler.
 */
import type { Duplex } from "node:stream";
import { type ServerType, serve } from "@hono/node-server";
import { describeUnknownSettings, unknownSettings } from "../core/env-settings";
import type { ApiApp } from "./app";
import { apiConfigFromEnv } from "./config";
import { PROBLEM_CONTENT_TYPE, type ProblemSlug, problemDocument } from "./problems";
import { createApiRuntime } from "./runtime";

/**
 * Largest request line + headers the server reads (Node's default is 16 KiB). Large enough that
 * any URL a client may plausibly send (an over-long id included) reaches the app and gets its
 * 400; beyond it the answer is 431 `request-too-large`, as problem+json too.
 */
export const MAX_REQUEST_HEAD_BYTES = 256 * 1024;

/**
 * Answers a request Node could not parse (head too large, malformed) with a problem document;
 * Node's own answer is a bare status line with an empty body.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, slug]: [number, string, ProblemSlug] =
    error.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "request-too-large"]
      : [400, "Bad Request", "malformed-request"];
  const body = JSON.stringify(problemDocument(slug));
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: ${PROBLEM_CONTENT_TYPE}\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Serves `app` on `port` (0 = any free port); resolves with the server and its port. */
export function startApiServer(app: ApiApp, port: number): Promise<{ server: ServerType; port: number }> {
  return new Promise((resolve) => {
    const server = serve(
      {
        fetch: app.fetch,
        port,
        hostname: "127.0.0.1",
        serverOptions: { maxHeaderSize: MAX_REQUEST_HEAD_BYTES },
      },
      (info) => resolve({ server, port: info.port }),
    );
    server.on("clientError", answerClientError);
  });
}

/**
 * True for an error raised by the Temporal client's own machinery outside any request (a gRPC
 * retry timer firing on a closed channel, a stream callback): it belongs to no request, and the
 * requests it affected have been answered with their own errors.
 */
export function isTemporalClientError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.message.includes("Channel has been shut down")) return true;
  return /[\\/]node_modules[\\/](@grpc[\\/]grpc-js|@temporalio[\\/]client)[\\/]/.test(error.stack ?? "");
}

/**
 * The process-level safety net: an error from the Temporal client that escaped every request is
 * logged and the server keeps serving. Anything else is a bug whose state is unknown: logged, and
 * the process exits (as Node would).
 */
export function installSafetyNet(log: (record: Record<string, unknown>) => void): void {
  const handle = (kind: string) => (error: unknown) => {
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    if (isTemporalClientError(error)) {
      log({
        level: "warn",
        msg: `temporal client error outside a request (${kind}); still serving`,
        error: detail,
      });
      return;
    }
    log({ level: "error", msg: `${kind}; exiting`, error: detail });
    process.exit(1);
  };
  process.on("uncaughtException", handle("uncaught exception"));
  process.on("unhandledRejection", handle("unhandled rejection"));
}

function logLine(record: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...record })}\n`);
}

async function main(): Promise<void> {
  installSafetyNet(logLine);
  // The one read of this process's environment: everything below gets its settings from here.
  const config = apiConfigFromEnv(process.env);
  for (const line of describeUnknownSettings(unknownSettings(process.env)))
    logLine({ level: "warn", msg: line });
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
