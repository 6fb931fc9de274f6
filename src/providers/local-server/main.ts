/**
 * Runs the local LLM server: `npx tsx src/providers/local-server/main.ts --port 4000`.
 * Options: --port N (default 0 = any free port), --host H (default 127.0.0.1),
 * --latency-ms N, --tokens-per-second N. Prints the base URL on stdout.
 */
import { parseArgs } from "node:util";
import { startLocalLlmServer } from "./server";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: "string", default: "0" },
      host: { type: "string", default: "127.0.0.1" },
      "latency-ms": { type: "string" },
      "tokens-per-second": { type: "string" },
    },
  });
  const numberOption = (value: string | undefined) => (value === undefined ? undefined : Number(value));
  const server = await startLocalLlmServer({
    port: Number(values.port),
    host: values.host,
    latencyMs: numberOption(values["latency-ms"]),
    tokensPerSecond: numberOption(values["tokens-per-second"]),
  });
  process.stdout.write(`${server.url}\n`);
  const stop = () => {
    server.close().then(() => process.exit(0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `local LLM server failed: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
