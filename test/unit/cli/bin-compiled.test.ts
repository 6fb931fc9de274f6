/**
 * bin/keel.js runs the compiled CLI (dist/cli/keel.js) only while it is current: never for
 * `keel dev`, never when a source it was built from changed since, and not when it is missing.
 * Tried on a copy of bin/keel.js in a scratch project whose "compiled" and "source" CLIs say
 * which of them ran (the scratch folder sits in the repository, so tsx resolves from its
 * node_modules as it does for the real sources).
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(__dirname, "../../..");
let scratch: string;

/** Which CLI answered `keel <args>`. */
function ran(args: string[], env: Record<string, string> = {}): string {
  return execFileSync(process.execPath, [join(scratch, "bin/keel.js"), ...args], {
    encoding: "utf8",
    env: { ...process.env, KEEL_CLI_SOURCES: "", ...env },
  }).trim();
}

function setTimes(path: string, seconds: number): void {
  utimesSync(path, seconds, seconds);
}

beforeEach(() => {
  mkdirSync(join(root, "test-artifacts"), { recursive: true });
  scratch = mkdtempSync(join(root, "test-artifacts/bin-"));
  for (const dir of ["bin", "dist/cli", "src/cli"]) mkdirSync(join(scratch, dir), { recursive: true });
  copyFileSync(join(root, "bin/keel.js"), join(scratch, "bin/keel.js"));
  writeFileSync(
    join(scratch, "src/cli/main.ts"),
    'export function cli(): void { console.log("sources"); }\n',
  );
  writeFileSync(join(scratch, "dist/cli/keel.js"), 'exports.cli = () => console.log("compiled");\n');
  writeFileSync(join(scratch, "dist/cli/inputs.json"), JSON.stringify({ inputs: ["src/cli/main.ts"] }));
  setTimes(join(scratch, "src/cli/main.ts"), 1_000);
  setTimes(join(scratch, "dist/cli/keel.js"), 2_000);
});

afterEach(() => {
  rmSync(scratch, { recursive: true, force: true });
});

test("a current build runs compiled; keel dev and KEEL_CLI_SOURCES=1 run the sources", () => {
  expect(ran(["sessions"])).toBe("compiled");
  expect(ran(["dev"])).toBe("sources");
  expect(ran(["sessions"], { KEEL_CLI_SOURCES: "1" })).toBe("sources");
});

test("a source edited after the build runs the sources, not the stale build", () => {
  setTimes(join(scratch, "src/cli/main.ts"), 3_000);
  expect(ran(["sessions"])).toBe("sources");
});

test("no build (a fresh clone before npm run ensure), or one without its input list, runs the sources", () => {
  rmSync(join(scratch, "dist/cli/inputs.json"));
  expect(ran(["sessions"])).toBe("sources");
  rmSync(join(scratch, "dist"), { recursive: true });
  expect(ran(["sessions"])).toBe("sources");
});
