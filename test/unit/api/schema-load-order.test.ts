/**
 * The API's schemas load whatever was loaded before them: a program that imports the tenant store
 * first (the fairness benchmark does, for the API's admission code) used to find its schemas
 * without the OpenAPI extension and crash at load.
 */
test("the tenant schemas load after the tenant store's", () => {
  jest.isolateModules(() => {
    require("../../../src/tenants/types");
    expect(() => require("../../../src/api/schemas/tenants")).not.toThrow();
    expect(typeof require("../../../src/api/tenant-runs").tenantServices).toBe("function");
  });
});
