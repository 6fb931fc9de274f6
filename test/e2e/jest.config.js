// The browser end-to-end tests: `npx jest -c test/e2e/jest.config.js`. They start their own
// local stack (`keel dev`), so no global setup; they need Debian's chromium (apt-get install chromium).
/** @type {import('jest').Config} */
module.exports = {
  rootDir: "../..",
  testEnvironment: "node",
  testMatch: ["<rootDir>/test/e2e/**/*.test.ts"],
  transform: {
    "^.+\\.tsx?$": [
      "@swc/jest",
      { jsc: { parser: { syntax: "typescript" }, target: "es2022" }, module: { type: "commonjs" } },
    ],
  },
  modulePathIgnorePatterns: ["<rootDir>/infra/cdk.out/"],
  testTimeout: 240_000,
};
