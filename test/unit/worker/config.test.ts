/** Worker configuration defaults that operators rely on. */
import { workerConfigFromEnv } from "../../../src/worker/config";

test("idle eviction of local workspaces is on by default (half an hour) and can be turned off", () => {
  const env = { KEEL_S3_BUCKET: "keel-test" };
  expect(workerConfigFromEnv(env).workspaceIdleEvictMs).toBe(1_800_000);
  expect(workerConfigFromEnv({ ...env, KEEL_WORKSPACE_IDLE_EVICT_SECONDS: "0" }).workspaceIdleEvictMs).toBe(
    0,
  );
  expect(workerConfigFromEnv({ ...env, KEEL_WORKSPACE_IDLE_EVICT_SECONDS: "90" }).workspaceIdleEvictMs).toBe(
    90_000,
  );
});
