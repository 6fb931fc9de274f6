/**
 * A recording HTTP server on 127.0.0.1 that stands in for a server an attacker names: it keeps
 * every request's headers and answers 400 in the providers' error shape (a non-retryable failure,
 * so nothing repeats), or redirects where `redirectTo` says.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export interface Recorder {
  url: string;
  requests: IncomingHttpHeaders[];
  close(): Promise<void>;
}

export async function startRecorder(options: { redirectTo?: () => string } = {}): Promise<Recorder> {
  const requests: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    requests.push(req.headers);
    if (options.redirectTo) {
      res.writeHead(307, { location: options.redirectTo() }).end();
      return;
    }
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: "recorded", type: "invalid_request_error" } }));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}
