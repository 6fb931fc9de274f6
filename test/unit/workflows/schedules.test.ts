/** Scheduled runs' pure parts: unattended approvals, durations, the session of a firing. */

import { DEFAULT_RUN_SETTINGS, type RunSettings } from "../../../src/contracts/runs";
import {
  DEFAULT_SCHEDULED_APPROVAL_WAIT_MS,
  firingSessionId,
  parseDuration,
  temporalScheduleId,
  unattendedSettings,
} from "../../../src/workflows/schedules";

const asking: RunSettings = {
  ...DEFAULT_RUN_SETTINGS,
  policy: {
    rules: [
      { tool: "bash", argumentsPattern: "rm", action: "ask" },
      { tool: "write", action: "allow" },
      { tool: "edit", action: "deny" },
    ],
    default: "ask",
    approvalTimeoutMs: 120_000,
  },
};

test("deny: every ask (rules and default) becomes a denial; other rules keep their order and action", () => {
  const settings = unattendedSettings(asking, "deny", true);
  expect(settings.policy).toEqual({
    rules: [
      { tool: "bash", argumentsPattern: "rm", action: "deny" },
      { tool: "write", action: "allow" },
      { tool: "edit", action: "deny" },
    ],
    default: "deny",
    approvalTimeoutMs: 120_000,
  });
  expect(asking.policy.rules[0]?.action).toBe("ask");
});

test("wait: asks stay, bounded by the caller's timeout, else by the scheduled default (not the 24 h one)", () => {
  expect(unattendedSettings(asking, "wait", true).policy).toEqual(asking.policy);
  expect(unattendedSettings(asking, "wait", false).policy.approvalTimeoutMs).toBe(
    DEFAULT_SCHEDULED_APPROVAL_WAIT_MS,
  );
});

test("durations", () => {
  expect(parseDuration("90s")).toBe(90_000);
  expect(parseDuration("1h30m")).toBe(5_400_000);
  expect(parseDuration("2d")).toBe(172_800_000);
  expect(parseDuration("500ms")).toBe(500);
  for (const text of ["", "1", "1.5h", "h", "1 h", "-1s", "1s "]) expect(parseDuration(text)).toBeUndefined();
});

test("a firing's session: schedule id, firing time and the run's last 8 characters; none for other workflows", () => {
  const schedule = { tenantId: "t1", scheduleId: "nightly" };
  const runId = "01a23c7a-27e1-751b-81e7-2fb9b6bab775";
  const workflowId = "keel-scheduled/t1/nightly-2026-12-03T03:00:00Z";
  expect(firingSessionId(schedule, { workflowId, runId })).toBe("nightly-20261203T030000Z-b6bab775");
  // Two firings in one second share the workflow id: the run id keeps their sessions apart.
  expect(firingSessionId(schedule, { workflowId, runId: "01a23c7a-0f0b-7510-b7cc-1811a549f1c5" })).toBe(
    "nightly-20261203T030000Z-a549f1c5",
  );
  expect(
    firingSessionId(schedule, { workflowId: "keel-scheduled/t2/nightly-2026-12-03T03:00:00Z", runId }),
  ).toBe(undefined);
  expect(firingSessionId(schedule, { workflowId: "something-else", runId })).toBeUndefined();
  expect(temporalScheduleId("t1", "nightly")).toBe("keel-schedule/t1/nightly");
});
