// Installs pinned wheels from PyPI with the machine's own pip, the one way Keel's scripts do it
// (scripts/bootstrap.mjs for the local servers, scripts/llm-mock-api.mjs for the mock LLM server):
// binary wheels only (`--only-binary :all:`, nothing is built here), quiet, into a `--target`
// folder, pip's own warnings about running as root silenced.
import { execFileSync } from "node:child_process";

/**
 * The Python interpreter (`python3` or `python`) that has pip. Throws an Error with
 * `missingMessage` when neither does.
 */
export function pythonWithPip(missingMessage) {
  for (const candidate of ["python3", "python"]) {
    try {
      execFileSync(candidate, ["-m", "pip", "--version"], { stdio: "ignore" });
      return candidate;
    } catch {
      // try the next name
    }
  }
  throw new Error(missingMessage);
}

/** A pip install that failed; `detail` holds the last lines pip wrote to stderr. */
export class PipInstallError extends Error {
  constructor(detail) {
    super(detail);
    this.name = "PipInstallError";
    this.detail = detail;
  }
}

/**
 * Installs `specs` (e.g. `name==1.2.3`) with `python -m pip` into `target`, with their
 * dependencies unless `noDeps`. Throws PipInstallError with the end of pip's stderr on failure.
 */
export function pipInstall(python, { specs, target, noDeps = false }) {
  try {
    execFileSync(
      python,
      [
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        ...(noDeps ? ["--no-deps"] : []),
        "--only-binary",
        ":all:",
        "--target",
        target,
        ...specs,
      ],
      { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, PIP_ROOT_USER_ACTION: "ignore" } },
    );
  } catch (error) {
    const detail = String(error.stderr ?? error.message)
      .trim()
      .split("\n")
      .slice(-3)
      .join("\n");
    throw new PipInstallError(detail);
  }
}
