/** A runner's settings: the workspace quota it enforces for the calls it runs. */
import { runnerSettingsFromEnv } from "../../../src/runner/settings";
import { DEFAULT_PROCESS_LIMITS } from "../../../src/tools/sandbox";

test("KEEL_WORKSPACE_MAX_MB sets the runner's workspace quota; 2048 MiB by default", () => {
  expect(runnerSettingsFromEnv({}).sandbox.limits).toEqual({
    ...DEFAULT_PROCESS_LIMITS,
    workspaceBytes: 2048 * 1024 ** 2,
  });
  expect(runnerSettingsFromEnv({ KEEL_WORKSPACE_MAX_MB: "100" }).sandbox.limits.workspaceBytes).toBe(
    100 * 1024 ** 2,
  );
  expect(() => runnerSettingsFromEnv({ KEEL_WORKSPACE_MAX_MB: "0" })).toThrow(/KEEL_WORKSPACE_MAX_MB/);
});
