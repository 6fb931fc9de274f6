/** `keel schedule create`'s first argument: a cron expression or an interval. */
import { UsageError } from "../../../src/api-client/client";
import { timingFrom } from "../../../src/cli/commands/schedule";

test("an interval (with or without `every`) or a cron expression; anything else is a usage error", () => {
  expect(timingFrom("15m")).toEqual({ every: "15m" });
  expect(timingFrom("every 1h30m")).toEqual({ every: "1h30m" });
  expect(timingFrom("@every 2d")).toEqual({ every: "2d" });
  expect(timingFrom("0 3 * * 1-5")).toEqual({ cron: "0 3 * * 1-5" });
  expect(timingFrom("@daily")).toEqual({ cron: "@daily" });
  for (const text of ["soon", "15 minutes", "0 3 * *"]) expect(() => timingFrom(text)).toThrow(UsageError);
});
