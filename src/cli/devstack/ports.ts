import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** What `waitForPort` says when the server died before it listened (a port taken, a bad flag). */
const EXITED_BEFORE_LISTENING = "process exited before listening";

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * The error of a server process that exited before it served on `port` (another process took the
 * port between picking and binding): `startOnFreePorts` tries again on new ports.
 */
export function exitedBeforeListening(port: number): Error {
  return new Error(`${EXITED_BEFORE_LISTENING} on port ${port}`);
}

/** `count` distinct free ports. */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port; rejects after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs: number, isAlive: () => boolean): Promise<void> {
  const { connect } = await import("node:net");
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive()) throw exitedBeforeListening(port);
    const open = await new Promise<boolean>((done) => {
      const socket = connect({ host: "127.0.0.1", port });
      socket.once("connect", () => {
        socket.destroy();
        done(true);
      });
      socket.once("error", () => done(false));
    });
    if (open) return;
    await sleep(100);
  }
  throw new Error(`nothing listened on port ${port} within ${timeoutMs} ms`);
}

/**
 * Starts a server on ports picked free, and again on newly picked ones when it exits before
 * listening: a port free when picked can be taken before the server binds it (by another server
 * of the same stack starting beside it). `start` picks its ports on each call; with ports the
 * caller fixed (`fixed`) a failure is final.
 */
export async function startOnFreePorts<T>(fixed: boolean, start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      const collided = error instanceof Error && error.message.includes(EXITED_BEFORE_LISTENING);
      if (fixed || !collided || attempt >= attempts) throw error;
    }
  }
}
