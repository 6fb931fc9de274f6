import { rmSync } from "node:fs";
import { takeRunningServers } from "./running-servers";

export default async function globalTeardown(): Promise<void> {
  const servers = takeRunningServers();
  if (!servers) return;
  await Promise.all(servers.stops.map((stop) => stop()));
  if (!process.env.KEEL_KEEP_TEST_DATA) rmSync(servers.dir, { recursive: true, force: true });
}
