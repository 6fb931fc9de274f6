import { createLogger, formatLogLine, REDACTED, recordLogger } from "../../../src/logging/logger";

function capture() {
  const lines: string[] = [];
  return { lines, write: (line: string) => lines.push(line) };
}

test("a line carries time, level, msg and component, then the caller's fields", () => {
  const { lines, write } = capture();
  createLogger("worker", write)("info", "worker started", { taskQueue: "runs" });
  expect(lines).toHaveLength(1);
  expect(lines[0]?.endsWith("\n")).toBe(true);
  const record = JSON.parse(lines[0] ?? "");
  expect(Object.keys(record)).toEqual(["time", "level", "msg", "component", "taskQueue"]);
  expect(record).toMatchObject({
    level: "info",
    msg: "worker started",
    component: "worker",
    taskQueue: "runs",
  });
  expect(Number.isNaN(Date.parse(record.time))).toBe(false);
});

test("secrets are redacted by key name, at any depth and in any spelling", () => {
  const record = JSON.parse(
    formatLogLine("api", "warn", "config", {
      apiKey: "sk-live-1",
      api_key: "sk-live-2",
      headers: { Authorization: "Bearer abc", "x-api-key": "sk-live-3", accept: "json" },
      providers: [{ name: "openai", token: "t-1" }],
      slackSigningSecret: "s-1",
      password: "hunter2",
      totalTokens: 12,
      accessToken: "at-1",
      model: "local-chat",
    }),
  );
  const text = JSON.stringify(record);
  for (const secret of ["sk-live-1", "sk-live-2", "sk-live-3", "Bearer abc", "t-1", "at-1", "s-1", "hunter2"])
    expect(text).not.toContain(secret);
  expect(record.apiKey).toBe(REDACTED);
  expect(record.headers).toEqual({ Authorization: REDACTED, "x-api-key": REDACTED, accept: "json" });
  expect(record.providers).toEqual([{ name: "openai", token: REDACTED }]);
  // A count of tokens is not a secret.
  expect(record.totalTokens).toBe(12);
  expect(record.model).toBe("local-chat");
});

test("the fixed fields cannot be overwritten by a caller's field", () => {
  const record = JSON.parse(
    formatLogLine("api", "error", "unhandled error", { msg: "spoofed", level: "info" }),
  );
  expect(record).toMatchObject({ msg: "unhandled error", level: "error", component: "api" });
});

test("errors are logged by name and message; record-style calls keep their level and message", () => {
  const { lines, write } = capture();
  const log = recordLogger(createLogger("api", write));
  log({ level: "warn", msg: "slack reply failed", error: new TypeError("boom") });
  log({ msg: "no level given" });
  const [first, second] = lines.map((line) => JSON.parse(line));
  expect(first).toMatchObject({
    level: "warn",
    msg: "slack reply failed",
    error: { name: "TypeError", message: "boom" },
  });
  expect(second).toMatchObject({ level: "info", msg: "no level given", component: "api" });
});
