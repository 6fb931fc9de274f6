/** Hand-over from the jest global setup to the global teardown (both run in jest's main process). */
export interface RunningServers {
  dir: string;
  stops: Array<() => Promise<void>>;
}

const slot = globalThis as typeof globalThis & { __keelServers?: RunningServers };

export function setRunningServers(servers: RunningServers): void {
  slot.__keelServers = servers;
}

export function takeRunningServers(): RunningServers | undefined {
  const servers = slot.__keelServers;
  slot.__keelServers = undefined;
  return servers;
}
