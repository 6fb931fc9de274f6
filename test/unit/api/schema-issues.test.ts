import { z } from "@hono/zod-openapi";
import { reportedIssues } from "../../../src/api/schema-issues";
import { mcpServersSchema } from "../../../src/mcp/schema";

function issuesOf(schema: z.ZodType, value: unknown) {
  const result = schema.safeParse(value);
  if (result.success) throw new Error("expected a refusal");
  return reportedIssues(result.error.issues);
}

describe("reportedIssues", () => {
  test("a stdio MCP server naming a secret by an invalid name reports the value's {secret} branch, not 'Invalid input'", () => {
    const servers = [{ name: "x", command: "node", env: { K: { secret: "KEEL_TOKEN" } } }];
    expect(issuesOf(mcpServersSchema(), servers)).toEqual([
      {
        path: "0.env.K.secret",
        message: "KEEL_TOKEN is a name the sandbox sets or that steers programs inside it; choose another",
      },
    ]);
  });

  test("an HTTP server with a bad URL reports the HTTP branch", () => {
    const issues = issuesOf(mcpServersSchema(), [{ name: "x", url: "http://127.0.0.1/mcp" }]);
    expect(issues.map((issue) => issue.path)).toEqual(["0.url", "0.url"]);
    expect(issues.map((issue) => issue.message).join(" ")).toMatch(/KEEL_MCP_HOSTS/);
  });

  test("branches that fail alike leave the union's own issue", () => {
    expect(issuesOf(mcpServersSchema(), [{ name: "x" }])).toEqual([{ path: "0", message: "Invalid input" }]);
  });

  test("other issues keep their path and message", () => {
    expect(issuesOf(z.object({ a: z.object({ b: z.number() }) }), { a: { b: "x" } })).toEqual([
      { path: "a.b", message: "Invalid input: expected number, received string" },
    ]);
  });
});
