// One config, three projects. Unit tests need nothing running; integration tests get a real
// Temporal dev server, a real S3 server and one shared workflow bundle from the global setup.
/** @type {import('jest').Config['transform']} */
const transform = {
  "^.+\\.tsx?$": [
    "@swc/jest",
    { jsc: { parser: { syntax: "typescript" }, target: "es2022" }, module: { type: "commonjs" } },
  ],
};

/** @type {import('jest').Config} */
module.exports = {
  // Synthesized CDK output holds copies of package.json; keep it out of jest's module map.
  modulePathIgnorePatterns: ["<rootDir>/infra/cdk.out", "<rootDir>/.keel"],
  // Integration tests drive real servers on a shared 2-core machine: generous per-test time.
  testTimeout: 60_000,
  // Two test files at once even on a 2-core machine (jest's default there is one): the
  // integration tests mostly wait on servers, heartbeats and timers, and two in parallel take
  // about half the wall time. Tests that start `keel dev` share its default ports as preferences
  // (src/cli/dev.ts) and so may run side by side.
  maxWorkers: 2,
  reporters: ["default", "<rootDir>/test/support/summary-reporter.js"],
  projects: [
    {
      displayName: "unit",
      testEnvironment: "node",
      transform,
      testMatch: ["<rootDir>/test/unit/**/*.test.ts"],
    },
    {
      displayName: "integration",
      testEnvironment: "node",
      transform,
      testMatch: ["<rootDir>/test/integration/**/*.test.ts"],
      globalSetup: "<rootDir>/test/support/global-setup.ts",
      globalTeardown: "<rootDir>/test/support/global-teardown.ts",
      setupFiles: ["<rootDir>/test/support/quiet-temporal-logs.ts"],
      slowTestThreshold: 30,
    },
  ],
};
