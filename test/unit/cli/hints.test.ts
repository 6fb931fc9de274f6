/** What the CLI tells a person to do next: the hint under an error, the approval commands, Ctrl-C's note. */
import { ApiError, hintFor } from "../../../src/api-client/client";
import { followInterruptedNote } from "../../../src/cli/commands/follow";
import { formatEvent } from "../../../src/cli/render";

describe("hintFor", () => {
  test("a refused key names KEEL_API_KEY and --key", () => {
    expect(hintFor(new ApiError(401, "unauthorized", "Missing or invalid credentials"))).toContain(
      "Set KEEL_API_KEY or pass --key",
    );
  });

  test("a refused key on the admin API names KEEL_ADMIN_KEY and the local stack's operator key", () => {
    for (const path of ["/v1/admin/tenants", "/prod/v1/admin/tenants/acme/usage"]) {
      const hint = hintFor(new ApiError(401, "unauthorized", "operator key", undefined, path));
      expect(hint).toContain("Set KEEL_ADMIN_KEY or pass --key");
      expect(hint).toContain("keel-dev-admin-key");
      expect(hint).not.toContain("KEEL_API_KEY");
    }
  });

  test("an unknown session names its id and `keel sessions`", () => {
    const error = new ApiError(
      404,
      "session-not-found",
      "No such session",
      undefined,
      "/v1/sessions/abc%20d/events",
    );
    expect(hintFor(error)).toBe(
      'Session "abc d" does not exist for this API key; `keel sessions` lists yours.',
    );
  });

  test("an unreachable API names the local stack and KEEL_API_URL", () => {
    expect(hintFor(new ApiError(0, "network", "cannot reach the API"))).toContain("npm run dev");
  });

  test("other problems say enough on their own", () => {
    expect(hintFor(new ApiError(409, "run-busy", "busy"))).toBeUndefined();
  });
});

test("an approval request prints the commands that answer it", () => {
  const line = formatEvent(
    { type: "approval_requested", seq: 3, toolCallId: "call_1", toolName: "bash", args: { command: "ls" } },
    { cost: 0, tokens: 0 },
    false,
    "s-1",
  );
  expect(line).toContain("approve: keel approve s-1 call_1");
  expect(line).toContain("reject: keel approve s-1 call_1 --reject");
});

test("Ctrl-C's note says the run goes on and how to follow or stop it", () => {
  expect(followInterruptedNote("s-1")).toContain("the run goes on");
  expect(followInterruptedNote("s-1")).toContain("keel events s-1 --follow");
  expect(followInterruptedNote("s-1")).toContain("keel abort s-1");
});
