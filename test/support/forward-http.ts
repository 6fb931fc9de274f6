/** Passes one HTTP request on to `upstream` and its answer back (for test and benchmark proxies). */
import { type IncomingMessage, request, type ServerResponse } from "node:http";

export function forwardHttp(upstream: URL, incoming: IncomingMessage, outgoing: ServerResponse): void {
  const forward = request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: incoming.method,
      path: incoming.url,
      headers: incoming.headers,
    },
    (response) => {
      outgoing.writeHead(response.statusCode ?? 502, response.headers);
      response.pipe(outgoing);
    },
  );
  forward.on("error", () => outgoing.destroy());
  incoming.pipe(forward);
}
