/**
 * The bash output spill against a command that turned Keel's `.keel/` namespace into links: to a
 * host file, to another tenant's workspace, to a host directory. The spill writes nothing outside
 * the workspace and the command's output comes back truncated either way.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { BashDetails } from "../../../src/tools/bash";
import { createScratchFile, prepareWorkspace, workspaceFor } from "../../../src/tools/workspace";
import { startSwapping } from "../../support/name-swapper";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

// The real spill, replaceable call by call to make it fail.
jest.mock("../../../src/tools/workspace", () => {
  const actual = jest.requireActual("../../../src/tools/workspace");
  return { ...actual, createScratchFile: jest.fn(actual.createScratchFile) };
});

let sandbox: Sandbox;
let before: string;
const inWorkspace = (...parts: string[]) => path.join(sandbox.workspace.dir, ...parts);
const outside = (...parts: string[]) => path.join(sandbox.outside, ...parts);

beforeEach(async () => {
  sandbox = await makeSandbox();
  before = await sandbox.snapshotOutside();
});
afterEach(async () => {
  expect(await sandbox.snapshotOutside()).toBe(before);
  await removeSandbox(sandbox);
});

describe("the bash output spill", () => {
  const LONG = "seq 1 2500";
  /** Runs `setup; seq 1 2500` and checks that the output came back truncated. */
  async function spill(setup: string): Promise<BashDetails> {
    const out = await sandbox.run("bash", { command: `${setup} && ${LONG}` });
    expect(out.isError).toBe(false);
    expect(textOf(out)).toContain("[Showing lines 501-2500 of 2500.");
    expect(textOf(out).startsWith("501\n")).toBe(true);
    return out.details as BashDetails;
  }
  /** The spill file holds the whole output, in the workspace, and `.keel/` is real again. */
  async function expectKeptInside(details: BashDetails): Promise<void> {
    expect(details.fullOutputPath).toMatch(/^\.keel\/scratch\/bash-.*\.log$/);
    const saved = await fs.readFile(inWorkspace(details.fullOutputPath ?? ""), "utf8");
    expect(saved.split("\n")).toHaveLength(2501);
    expect((await fs.lstat(inWorkspace(".keel"))).isDirectory()).toBe(true);
    expect((await fs.lstat(inWorkspace(".keel/scratch"))).isDirectory()).toBe(true);
    expect(await fs.readFile(inWorkspace(".keel/.gitignore"), "utf8")).toBe("*\n");
  }

  test("`.keel/.gitignore` linked to a host file: the host file is not written", async () => {
    const details = await spill(
      `mkdir -p .keel && ln -sfn ${JSON.stringify(outside("secret.txt"))} .keel/.gitignore`,
    );
    await expectKeptInside(details);
  });

  test("`.keel` linked to another tenant's workspace: nothing is written there", async () => {
    const other = workspaceFor(path.join(sandbox.base, "root"), "tenant2", "session9");
    await prepareWorkspace(other);
    await fs.writeFile(path.join(other.dir, "theirs.txt"), "their file\n");
    const details = await spill(`ln -sfn ${JSON.stringify(other.dir)} .keel`);
    expect(await fs.readdir(other.dir)).toEqual(["theirs.txt"]);
    expect(await fs.readFile(path.join(other.dir, "theirs.txt"), "utf8")).toBe("their file\n");
    await expectKeptInside(details);
  });

  test("`.keel/scratch` linked to a host directory, or `.keel` a file: made real directories", async () => {
    await expectKeptInside(
      await spill(`mkdir -p .keel && ln -sfn ${JSON.stringify(outside())} .keel/scratch`),
    );
    await expectKeptInside(await spill("rm -rf .keel && echo mine > .keel"));
  });

  test("when no spill file can be made, the output is still truncated and the notice says so", async () => {
    jest.mocked(createScratchFile).mockResolvedValueOnce(undefined);
    const out = await sandbox.run("bash", { command: LONG });
    expect(out.isError).toBe(false);
    expect(textOf(out).startsWith("501\n")).toBe(true);
    expect(textOf(out)).toContain("[Showing lines 501-2500 of 2500. The full output could not be kept.]");
    expect((out.details as BashDetails).fullOutputPath).toBeUndefined();
  });
});

test("`.keel` swapped between a directory and a link to another workspace while spills are made", async () => {
  const other = workspaceFor(path.join(sandbox.base, "root"), "tenant2", "session9");
  await prepareWorkspace(other);
  const swapper = startSwapping(sandbox.workspace.dir, ".keel", { dir: {} }, other.dir);
  let made = 0;
  try {
    for (let round = 0; round < 300; round++) {
      const file = await createScratchFile(sandbox.workspace, `race-${round}.log`);
      if (!file) continue;
      made++;
      await file.handle.close();
    }
  } finally {
    await swapper.stop();
  }
  expect(made).toBeGreaterThan(0);
  expect(await fs.readdir(other.dir)).toEqual([]);
});
