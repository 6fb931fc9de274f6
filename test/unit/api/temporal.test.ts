import { isConnectionFailure } from "../../../src/api/temporal";

test("connection failures are told apart from request failures", () => {
  expect(isConnectionFailure({ code: 14, details: "unavailable" })).toBe(true);
  expect(isConnectionFailure(new Error("x", { cause: { code: 14 } }))).toBe(true);
  expect(isConnectionFailure({ code: 5 })).toBe(false);
  expect(isConnectionFailure(new Error("plain"))).toBe(false);
});
