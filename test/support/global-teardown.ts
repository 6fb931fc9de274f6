import { rmSync } from "node:fs";
import { takeRunningServers } from "./running-servers";

/** How long jest may stay alive after the run before the leftovers are named and it is ended. */
const EXIT_GRACE_MS = 30_000;

export default async function globalTeardown(): Promise<void> {
  const servers = takeRunningServers();
  if (servers) {
    await Promise.all(servers.stops.map((stop) => stop()));
    if (!process.env.KEEL_KEEP_TEST_DATA) rmSync(servers.dir, { recursive: true, force: true });
  }
  // On a two-core machine jest runs the tests in its own process, so a handle a test (or the code
  // under test) leaves open keeps the whole run from exiting until CI's limit. A leak is a defect:
  // name what is left and fail the run. Unref'd: it never keeps the process alive by itself.
  setTimeout(() => {
    console.error(
      `jest did not exit ${EXIT_GRACE_MS / 1000} s after the run, failing it; still open: ${process.getActiveResourcesInfo().join(", ")}`,
    );
    process.exit(1);
  }, EXIT_GRACE_MS).unref();
}
