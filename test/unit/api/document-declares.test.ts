/**
 * The OpenAPI document declares what the server answers: the 422 of an Idempotency-Key reused with
 * another request on every operation that takes the key, and usage days the server accepts.
 */
import { createHash } from "node:crypto";
import Ajv2020 from "ajv/dist/2020";
import { createApp } from "../../../src/api/app";
import type { ApiDependencies } from "../../../src/api/route-context";
import { loadCatalog } from "../../../src/providers/models";

type Operation = {
  parameters?: Array<{ name: string; in: string; schema: object }>;
  responses: Record<string, unknown>;
};
type Document = { paths: Record<string, Record<string, Operation>> };

const KEY = "unit-key";

/** An app over no servers: the document route and request validation need none. */
function app() {
  const unused = () => {
    throw new Error("not used before validation");
  };
  return createApp({
    config: {
      apiKeys: { [createHash("sha256").update(KEY).digest("hex")]: "t1" },
      bodyLimitBytes: 1024,
      allowDirectoryWorkspaces: false,
      sseMaxSeconds: 0,
      defaultModel: "local-chat",
    },
    runs: unused,
    store: {},
    snapshots: {},
    objects: {},
    catalog: loadCatalog(),
    log: () => undefined,
  } as unknown as ApiDependencies);
}

async function servedDocument(): Promise<Document> {
  return (await (await app().request("/v1/openapi.json")).json()) as Document;
}

const operations = (document: Document) =>
  Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
  );

test("every operation that takes an Idempotency-Key declares 422 (the key reused with another request)", async () => {
  const document = await servedDocument();
  const idempotent = operations(document).filter(({ operation }) =>
    (operation.parameters ?? []).some((parameter) => parameter.name === "Idempotency-Key"),
  );
  expect(idempotent.length).toBeGreaterThan(10);
  const without422 = idempotent.filter(({ operation }) => !("422" in operation.responses));
  expect(without422.map(({ method, path }) => `${method} ${path}`)).toEqual([]);
});

test("every POST the idempotency middleware covers declares the Idempotency-Key", async () => {
  const document = await servedDocument();
  // src/api/app.ts puts the middleware on these paths; it acts on POSTs only.
  const covered = operations(document).filter(
    ({ path, method }) => method === "post" && /^\/v1\/(sessions|schedules)(\/|$)/.test(path),
  );
  const undeclared = covered.filter(
    ({ operation }) =>
      !(operation.parameters ?? []).some((parameter) => parameter.name === "Idempotency-Key"),
  );
  expect(undeclared.map(({ path }) => path)).toEqual([]);
});

describe("usage days", () => {
  const ajv = new Ajv2020({ strict: false, validateFormats: false });

  async function dayValidator(path: string) {
    const parameters = (await servedDocument()).paths[path]?.get?.parameters ?? [];
    const to = parameters.find((parameter) => parameter.name === "to");
    if (!to) throw new Error(`no "to" parameter on ${path}`);
    return ajv.compile(to.schema);
  }

  test("the document admits exactly the real days (its pattern, even where formats are not checked)", async () => {
    const validate = await dayValidator("/v1/usage");
    const pad = (value: number, width: number) => String(value).padStart(width, "0");
    for (const year of [0, 100, 400, 1900, 2000, 2023, 2024, 2100, 9999]) {
      for (let month = 0; month <= 13; month++) {
        for (let day = 0; day <= 32; day++) {
          const text = `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
          const date = new Date(0);
          date.setUTCFullYear(year, month - 1, day);
          const real = date.toISOString().slice(0, 10) === text;
          expect({ text, admitted: validate(text) }).toEqual({ text, admitted: real });
        }
      }
    }
  });

  test("an impossible day is a 400 the document predicts, on the tenant's and the operator's route", async () => {
    for (const path of ["/v1/usage", "/v1/admin/tenants/{tenantId}/usage"]) {
      expect((await dayValidator(path))("0000-00-00")).toBe(false);
    }
    for (const day of ["0000-00-00", "2026-02-30", "2023-02-29"]) {
      const response = await app().request(`/v1/usage?to=${day}`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      const problem = (await response.json()) as { type: string };
      expect({ day, status: response.status, type: problem.type }).toEqual({
        day,
        status: 400,
        type: expect.stringMatching(/invalid-request$/),
      });
    }
  });
});
