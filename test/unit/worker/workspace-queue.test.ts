/** The tool task queue of a worker: one per workspace folder and host, stable across restarts. */
import { workspaceTaskQueue } from "../../../src/worker/create-worker";

test("a worker restarted on the same workspace folder polls the same tool queue", () => {
  const first = workspaceTaskQueue("keel", "/data/workspaces", "host-a");
  expect(first).toMatch(/^keel\/worker\/host-a-[0-9a-f]{12}$/);
  expect(workspaceTaskQueue("keel", "/data/workspaces/", "host-a")).toBe(first);
  expect(workspaceTaskQueue("keel", "/data/other", "host-a")).not.toBe(first);
  expect(workspaceTaskQueue("keel", "/data/workspaces", "host-b")).not.toBe(first);
  expect(workspaceTaskQueue("runs", "/data/workspaces", "host-a")).not.toBe(first);
});
