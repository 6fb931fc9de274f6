import { allowedMethods } from "../../../src/api/allowed-methods";

test("allowed methods: pattern routes match by segment, literal routes win, middleware does not count", () => {
  const routes = [
    { method: "ALL", path: "/v1/sessions/*" },
    { method: "GET", path: "/v1/sessions/:sessionId" },
    { method: "POST", path: "/v1/sessions/:sessionId/messages" },
    { method: "POST", path: "/v1/sessions/import" },
  ];
  expect(allowedMethods(routes, "/v1/sessions/s1")).toEqual(["GET"]);
  expect(allowedMethods(routes, "/v1/sessions/import")).toEqual(["POST"]);
  expect(allowedMethods(routes, "/v1/sessions/s1/messages")).toEqual(["POST"]);
  expect(allowedMethods(routes, "/v1/sessions/s1/other")).toEqual([]);
  expect(allowedMethods(routes, "/v1/sessions/")).toEqual([]);
});
