/** The worker's sandbox settings and its refusal to start without a working sandbox. */
import { workerConfigFromEnv } from "../../../src/worker/config";
import { checkSandbox } from "../../../src/worker/worker-setup";

const MIB = 1024 ** 2;
/** The least a worker's environment needs besides the sandbox settings. */
const BASE = { KEEL_S3_BUCKET: "keel" };
const configOf = (env: NodeJS.ProcessEnv = {}) => workerConfigFromEnv({ ...BASE, ...env });

describe("sandbox configuration", () => {
  test("on by default, with the default limits and no pass-through", () => {
    const { sandbox } = configOf();
    expect(sandbox).toMatchObject({ isolation: "bwrap", passEnv: [], fullNetwork: "off" });
    expect(sandbox.limits.processes).toBeGreaterThan(0);
  });

  test("KEEL_SANDBOX_* set the isolation, limits and passed variables", () => {
    const { sandbox, singleTenant } = configOf({
      KEEL_SANDBOX: "off",
      KEEL_SINGLE_TENANT: "acme",
      KEEL_SANDBOX_PASS_ENV: "NODE_ENV, JAVA_HOME",
      KEEL_SANDBOX_MEMORY_MB: "256",
      KEEL_SANDBOX_MAX_PROCESSES: "32",
      KEEL_SANDBOX_CPU_SECONDS: "45",
      KEEL_SANDBOX_NETWORK_FULL: "tenant-a,tenant-b",
      KEEL_SANDBOX_MAX_FILE_MB: "5",
      KEEL_SANDBOX_TMP_MB: "7",
      KEEL_SANDBOX_MAX_SECONDS: "90",
      KEEL_WORKSPACE_MAX_MB: "300",
      NODE_ENV: "production",
      OPENAI_API_KEY: "sk-never-kept",
    });
    expect(sandbox).toEqual({
      isolation: "off",
      passEnv: ["NODE_ENV", "JAVA_HOME"],
      // What commands may be given of the worker's environment, and nothing else of it.
      hostEnv: { NODE_ENV: "production" },
      fullNetwork: { tenants: ["tenant-a", "tenant-b"] },
      limits: {
        memoryBytes: 256 * MIB,
        processes: 32,
        cpuSeconds: 45,
        fileSizeBytes: 5 * MIB,
        tmpBytes: 7 * MIB,
        wallTimeMs: 90_000,
        workspaceBytes: 300 * MIB,
      },
    });
    expect(singleTenant).toBe("acme");
  });

  test("KEEL_SANDBOX=off is refused unless the worker is declared for one tenant", () => {
    expect(() => configOf({ KEEL_SANDBOX: "off" })).toThrow(/KEEL_SANDBOX=off requires KEEL_SINGLE_TENANT/);
    expect(() => configOf({ KEEL_SANDBOX: "off", KEEL_SINGLE_TENANT: "../other" })).toThrow(
      /KEEL_SINGLE_TENANT: must be a valid tenant id/,
    );
    expect(configOf({ KEEL_SANDBOX: "off", KEEL_SINGLE_TENANT: "acme" }).sandbox.isolation).toBe("off");
    // A sandboxed worker may be declared for one tenant too; by default it serves every tenant.
    expect(configOf().singleTenant).toBeUndefined();
  });

  test("a worker that runs no tool call (KEEL_WORKER_TOOLS=off) may go without the sandbox for every tenant", () => {
    const config = configOf({ KEEL_SANDBOX: "off", KEEL_WORKER_TOOLS: "off" });
    expect(config.workerTools).toBe(false);
    expect(config.singleTenant).toBeUndefined();
    expect(configOf().workerTools).toBeUndefined();
    expect(() => configOf({ KEEL_WORKER_TOOLS: "no" })).toThrow(/KEEL_WORKER_TOOLS/);
  });

  test("refuses secret-looking pass-through names and unknown modes", () => {
    expect(() => configOf({ KEEL_SANDBOX_PASS_ENV: "AWS_SECRET_ACCESS_KEY" })).toThrow(/looks like a secret/);
    expect(() => configOf({ KEEL_SANDBOX: "maybe" })).toThrow(/KEEL_SANDBOX/);
    expect(() => configOf({ KEEL_SANDBOX_NETWORK_FULL: "true" })).toThrow(/KEEL_SANDBOX_NETWORK_FULL/);
  });
});

describe("worker start", () => {
  let logged: string[];
  let write: jest.SpyInstance;
  const path = process.env.PATH;
  beforeEach(() => {
    logged = [];
    write = jest.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      logged.push(String(chunk));
      return true;
    });
  });
  afterEach(() => {
    write.mockRestore();
    process.env.PATH = path;
  });

  test("starts when the sandbox works", () => {
    expect(() => checkSandbox(configOf().sandbox)).not.toThrow();
  });

  test("refuses to start when bwrap cannot run, naming KEEL_SANDBOX=off", () => {
    process.env.PATH = "/nonexistent";
    expect(() => checkSandbox(configOf().sandbox)).toThrow(
      /tool sandbox \(bubblewrap\) cannot start on this machine: bubblewrap \(bwrap\) is not installed.*KEEL_SANDBOX=off/,
    );
  });

  test("with KEEL_SANDBOX=off, starts anyway and logs a warning every time", () => {
    process.env.PATH = "/nonexistent";
    const { sandbox, singleTenant } = configOf({ KEEL_SANDBOX: "off", KEEL_SINGLE_TENANT: "acme" });
    checkSandbox(sandbox, singleTenant);
    checkSandbox(sandbox, singleTenant);
    const warnings = logged.map((line) => JSON.parse(line)).filter((line) => line.level === "warn");
    expect(warnings).toHaveLength(2);
    expect(warnings[0].msg).toMatch(/tool sandbox is OFF/);
    expect(warnings[0].singleTenant).toBe("acme");
  });
});
