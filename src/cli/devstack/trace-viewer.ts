/**
 * The trace viewer of `keel dev --traces`: a loopback HTTP server showing the traces Jaeger holds
 * as pages (trace-pages.ts), because the Jaeger built from the Go module proxy has no web UI. It
 * reads Jaeger's query API on every request and keeps nothing. Routes: `/` (recent traces of the
 * API and the workers; `?session=ID` those of one session), `/trace/<trace id>` (one waterfall).
 * Every page is served with a content policy that allows no script and no remote load.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { escapeHtml, type JaegerTrace, renderTraceList, renderTraceWaterfall } from "./trace-pages";

export interface TraceViewer {
  url: string;
  close(): Promise<void>;
}

/** The services whose traces the list shows (the API's and the workers' spans). */
const SERVICES = ["keel-api", "keel-worker"];
const TRACE_ID = /^[0-9a-f]{16,32}$/;
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
};

/** Starts the viewer on 127.0.0.1 (`port` 0: any free port), reading Jaeger's query API at `jaegerUrl`. */
export async function startTraceViewer(options: { jaegerUrl: string; port?: number }): Promise<TraceViewer> {
  const query = async (path: string): Promise<JaegerTrace[]> => {
    const response = await fetch(`${options.jaegerUrl}${path}`, { signal: AbortSignal.timeout(10_000) });
    if (response.status === 404) return [];
    if (!response.ok) throw new Error(`Jaeger answered ${path} with HTTP ${response.status}`);
    return ((await response.json()) as { data: JaegerTrace[] | null }).data ?? [];
  };
  const server: Server = createServer((request, response) => {
    const send = (status: number, html: string) => {
      response.writeHead(status, HEADERS);
      response.end(html);
    };
    const url = new URL(request.url ?? "/", "http://viewer");
    void (async () => {
      if (request.method !== "GET") return send(405, "Only GET.");
      const trace = /^\/trace\/([^/]+)$/.exec(url.pathname)?.[1];
      if (trace !== undefined) {
        if (!TRACE_ID.test(trace)) return send(400, "Not a trace id.");
        const [found] = await query(`/api/traces/${trace}`);
        return found ? send(200, renderTraceWaterfall(found)) : send(404, "No such trace (yet).");
      }
      if (url.pathname !== "/") return send(404, "Not found.");
      const session = url.searchParams.get("session") ?? undefined;
      if (session !== undefined && !SESSION_ID.test(session)) return send(400, "Not a session id.");
      const tags =
        session === undefined
          ? ""
          : `&tags=${encodeURIComponent(JSON.stringify({ "keel.session_id": session }))}`;
      // A session's spans are the workers'; the list otherwise shows both services' recent traces.
      const services = session === undefined ? SERVICES : ["keel-worker"];
      const found = (
        await Promise.all(
          services.map((service) => query(`/api/traces?service=${service}&limit=20&lookback=6h${tags}`)),
        )
      ).flat();
      const unique = [...new Map(found.map((item) => [item.traceID, item])).values()];
      return send(200, renderTraceList(unique, session === undefined ? {} : { session }));
    })().catch((error: unknown) =>
      send(
        502,
        `Jaeger could not be read: ${escapeHtml(error instanceof Error ? error.message : String(error))}`,
      ),
    );
  });
  await new Promise<void>((listening, failed) => {
    server.once("error", failed);
    server.listen(options.port ?? 0, "127.0.0.1", () => listening());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((closed) => server.close(() => closed())),
  };
}
