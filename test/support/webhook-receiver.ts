/**
 * A webhook receiver for the tests: test/support/webhook_receiver.py, which checks each request's
 * signature with the Standard Webhooks reference implementation for Python (`standardwebhooks`
 * from PyPI, installed by scripts/ensure-mcp-servers.mjs), run as its own process on a fixed
 * port so a test can stop it (closed) and start it again, or have it answer 503 (down).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import { eventually } from "./run-harness";

const projectRoot = resolve(__dirname, "../..");
const pythonDir = realpathSync(join(projectRoot, ".keel/tools/mcp-python"));
const python = (JSON.parse(readFileSync(join(pythonDir, ".installed"), "utf8")) as { python: string }).python;

/** One request the receiver got. */
export interface Received {
  id: string;
  type: string;
  sessionId: string;
  path: string;
  /** What it answered. */
  status: number;
  /** Per secret of the receiver's list: whether the signature verified with it. */
  verified: boolean[];
  body: { id: string; type: string; timestamp: string; data: Record<string, unknown> };
}

export interface WebhookReceiver {
  port: number;
  received: Received[];
  /** Sets the secrets requests are checked against and the status answered (when one verifies). */
  control(state: { secrets?: string[]; status?: number }): Promise<void>;
  /** Stops the process (connections refused) until `start`. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Resolves with the requests `pick` chooses once it chooses any (polls). */
  until(
    pick: (received: Received[]) => Received[] | undefined,
    what: string,
    timeoutMs?: number,
  ): Promise<Received[]>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let child: ChildProcess | undefined;
  let port = 0;
  let state: { secrets?: string[]; status?: number } = {};
  const received: Received[] = [];

  async function start(): Promise<void> {
    const proc = spawn(python, [join(__dirname, "webhook_receiver.py"), String(port)], {
      env: { PATH: process.env.PATH, PYTHONPATH: pythonDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    let buffer = "";
    let errors = "";
    proc.stderr?.on("data", (chunk: Buffer) => {
      errors += chunk.toString();
    });
    port = await new Promise<number>((done, fail) => {
      proc.once("exit", () => fail(new Error(`the webhook receiver exited:\n${errors}`)));
      proc.stdout?.on("data", (chunk: Buffer) => {
        buffer += chunk.toString();
        const lines = buffer.split("\n");
        buffer = lines.pop() ?? "";
        for (const line of lines) {
          const record = JSON.parse(line) as Received & { listening?: number; path?: string };
          if (record.listening !== undefined) done(record.listening);
          else received.push(record);
        }
      });
    });
    if (state.secrets || state.status) await control(state);
  }

  async function control(next: { secrets?: string[]; status?: number }): Promise<void> {
    state = { ...state, ...next };
    const response = await fetch(`http://127.0.0.1:${port}/control`, {
      method: "POST",
      body: JSON.stringify(state),
    });
    if (response.status !== 204) throw new Error(`the receiver's control answered ${response.status}`);
  }

  async function stop(): Promise<void> {
    const proc = child;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise<void>((done) => proc.once("exit", () => done()));
    proc.kill("SIGKILL");
    await exited;
  }

  await start();
  return {
    get port() {
      return port;
    },
    received,
    control,
    stop,
    start,
    until: (pick, what, timeoutMs = 30_000) => eventually(async () => pick(received), timeoutMs, what),
  };
}
