/** `keel run --agents FILE`: the file's definitions become the message's `agents`. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { messageBodySchema } from "../../../src/api/schemas";
import { UsageError } from "../../../src/api-client/client";
import { messageBody } from "../../../src/cli/commands/message";

const dir = mkdtempSync(join(tmpdir(), "keel-agents-"));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const API = "http://127.0.0.1:8080";
const agents = [{ name: "reviewer", description: "reviews diffs", tools: ["read", "grep"], maxTurns: 5 }];

test("the definitions in the file are the body's agents, which the API's schema takes", () => {
  const path = file("agents.json", JSON.stringify(agents));
  const body = messageBody("go", "auto", { tools: "read,grep,task", agents: path }, API);
  expect(body).toMatchObject({ tools: ["read", "grep", "task"], agents });
  const schema = messageBodySchema({ modelIds: [], allowDirectoryWorkspaces: false });
  expect(schema.safeParse(body).success).toBe(true);
});

test("agents the run could never call, or a file that is not a JSON array, are usage errors", () => {
  const path = file("ok.json", JSON.stringify(agents));
  expect(() => messageBody("go", "auto", { agents: path }, API)).toThrow(UsageError);
  expect(() => messageBody("go", "auto", { tools: "read", agents: path }, API)).toThrow(/add it to --tools/);
  const object = file("object.json", JSON.stringify(agents[0]));
  expect(() => messageBody("go", "auto", { tools: "task", agents: object }, API)).toThrow(/JSON array/);
  const broken = file("broken.json", "[{");
  expect(() => messageBody("go", "auto", { tools: "task", agents: broken }, API)).toThrow(/not JSON/);
  expect(() => messageBody("go", "auto", { tools: "task", agents: join(dir, "missing.json") }, API)).toThrow(
    /cannot read .*ENOENT/,
  );
});
