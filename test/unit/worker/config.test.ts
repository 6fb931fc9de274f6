/** Worker configuration defaults that operators rely on. */
import { workerConfigFromEnv, workflowBundleOf } from "../../../src/worker/config";

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

test("a worker with telemetry on loads the traced prebuilt bundle when the image has one, else the plain one", () => {
  const env = { KEEL_S3_BUCKET: "keel-test", KEEL_WORKFLOW_BUNDLE: "/app/plain.js" };
  const both = workerConfigFromEnv({ ...env, KEEL_WORKFLOW_BUNDLE_TRACED: "/app/traced.js" });
  expect(workflowBundleOf(both, true)).toBe("/app/traced.js");
  expect(workflowBundleOf(both, false)).toBe("/app/plain.js");
  expect(workflowBundleOf(workerConfigFromEnv(env), true)).toBe("/app/plain.js");
  // No prebuilt bundle: the worker bundles its workflows at start (with the interceptors when traced).
  expect(workflowBundleOf(workerConfigFromEnv({ KEEL_S3_BUCKET: "keel-test" }), true)).toBeUndefined();
});
