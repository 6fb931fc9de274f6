/**
 * The OpenAPI document and the server's own checks agree on what they accept, for the values the
 * API fuzz found them disagreeing on, and on the shapes the document takes from the core.
 */
import Ajv2020 from "ajv/dist/2020";
import { createApp } from "../../../src/api/app";
import type { ApiDependencies } from "../../../src/api/route-context";
import { PI_HEADER_JSON_SCHEMA } from "../../../src/api/schemas";
import { importPartsSession } from "../../../src/core/parts-session";
import { SessionHeaderSchema } from "../../../src/core/session-types";
import { loadCatalog } from "../../../src/providers/models";

type JsonSchema = { [keyword: string]: unknown };

/** The document of an app whose message bodies may name worker directories (as keel dev's). */
async function servedDocument(): Promise<{ components: { schemas: Record<string, JsonSchema> } }> {
  const unused = () => {
    throw new Error("not used by the document route");
  };
  const dependencies = {
    config: {
      apiKeys: {},
      bodyLimitBytes: 1024,
      allowDirectoryWorkspaces: true,
      sseMaxSeconds: 0,
      defaultModel: "local-chat",
    },
    runs: unused,
    store: {},
    snapshots: {},
    objects: {},
    catalog: loadCatalog(),
    log: () => undefined,
    // The document route reads only the configuration and the catalog.
  } as unknown as ApiDependencies;
  const response = await createApp(dependencies).request("/v1/openapi.json");
  return (await response.json()) as { components: { schemas: Record<string, JsonSchema> } };
}

const ajv = new Ajv2020({ strict: false, validateFormats: false });

test("a directory workspace's path: the document refuses a relative path, as the server does", async () => {
  const { components } = await servedDocument();
  const validate = ajv.compile({ ...components.schemas.MessageRequest, components });
  const body = (path: string) => ({ text: "hi", workspace: { type: "directory", path } });
  // The fuzz sent "000…": the document allowed it, the server answered 400.
  expect(validate(body("000"))).toBe(false);
  expect(validate(body("/srv/project"))).toBe(true);
});

test("a pi header import: the document states the core's header schema (any integer version)", () => {
  const validate = ajv.compile(PI_HEADER_JSON_SCHEMA);
  const header = { type: "session", id: "x", timestamp: "2026-01-01T00:00:00.000Z" };
  for (const version of [-58_800, 1, 3, 7, undefined]) {
    const candidate = { ...header, version };
    // The fuzz sent version -58800: the server imported it (a version below 2 migrates as 1)
    // while the document allowed 1-3 only.
    expect({ version, document: validate(candidate) }).toEqual({
      version,
      document: SessionHeaderSchema.safeParse(candidate).success,
    });
  }
  expect(validate({ ...header, version: 1.5 })).toBe(false);
  expect(validate({ ...header, type: "entry" })).toBe(false);
});

test("the session view's usage is the core's: cost.unpriced and estimated are declared", async () => {
  const { components } = await servedDocument();
  const usage = components.schemas.Usage as { properties: Record<string, { properties?: object }> };
  expect(Object.keys(usage.properties)).toEqual(expect.arrayContaining(["estimated", "cost"]));
  expect(Object.keys(usage.properties.cost?.properties ?? {})).toContain("unpriced");
});

test("a wire session import: the document allows any `session_id`, as the import keeps any", async () => {
  const document = (await servedDocument()) as unknown as {
    paths: Record<string, { post: { requestBody: { content: Record<string, { schema: JsonSchema }> } } }>;
  };
  const validate = ajv.compile(
    document.paths["/v1/sessions/import"]!.post.requestBody.content["application/json"]!.schema,
  );
  // The fuzz sent a session_id that is not a string: the server imported it, the document said string.
  for (const sessionId of [5, null, { a: 1 }, "s-1"]) {
    const body = { session_id: sessionId, messages: [] };
    expect({ sessionId, document: validate(body) }).toEqual({ sessionId, document: true });
    expect(importPartsSession(body, Math.random, "2026-01-01T00:00:00.000Z").problems).toEqual([]);
  }
});
