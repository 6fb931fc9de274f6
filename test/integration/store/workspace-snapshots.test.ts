/** Workspace snapshots against the real S3 server: round trips, incremental uploads, restores. */

import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { WorkspaceSnapshots } from "../../../src/store/workspace-snapshots";
import { WorkspaceTooLargeError } from "../../../src/store/workspace-tree";
import { s3Client, s3Settings, testTmpDir } from "../../support/integration-env";
import { countOf, newRef, recordCommands, type SentCommand } from "./store-fixtures";

const clients: S3Client[] = [];
afterAll(() => {
  for (const client of clients) client.destroy();
});

function open(): { snapshots: WorkspaceSnapshots; sent: SentCommand[] } {
  const client = s3Client();
  clients.push(client);
  const sent = recordCommands(client);
  return { snapshots: new WorkspaceSnapshots(client, s3Settings()), sent };
}

async function tempDir(name: string): Promise<string> {
  return fs.mkdtemp(path.join(testTmpDir(), `${name}-`));
}

/** Every path under `dir` with its type, mode and content (or link target), sorted. */
async function describeTree(dir: string): Promise<string[]> {
  const lines: string[] = [];
  async function visit(current: string, relative: string) {
    for (const name of (await fs.readdir(current)).sort()) {
      const full = path.join(current, name);
      const rel = relative ? `${relative}/${name}` : name;
      const stats = await fs.lstat(full);
      const mode = (stats.mode & 0o7777).toString(8);
      if (stats.isSymbolicLink()) lines.push(`${rel} -> ${await fs.readlink(full)}`);
      else if (stats.isDirectory()) {
        lines.push(`${rel}/ ${mode}`);
        await visit(full, rel);
      } else lines.push(`${rel} ${mode} ${(await fs.readFile(full)).toString("base64")}`);
    }
  }
  await visit(dir, "");
  return lines;
}

async function makeWorkspace(): Promise<string> {
  const dir = path.join(await tempDir("ws"), "workspace");
  await fs.mkdir(path.join(dir, "src/nested"), { recursive: true });
  await fs.writeFile(path.join(dir, "README.md"), "# title\n");
  await fs.writeFile(path.join(dir, "src/main.ts"), "export const x = 1;\n");
  await fs.writeFile(path.join(dir, "src/nested/data.bin"), Buffer.from([0, 1, 2, 255, 254]));
  await fs.writeFile(path.join(dir, "src/copy.ts"), "export const x = 1;\n"); // same bytes as main.ts
  await fs.writeFile(path.join(dir, "run.sh"), "#!/bin/sh\necho hi\n");
  await fs.chmod(path.join(dir, "run.sh"), 0o755);
  await fs.writeFile(path.join(dir, "private.txt"), "mine\n");
  await fs.chmod(path.join(dir, "private.txt"), 0o600);
  await fs.symlink("src/main.ts", path.join(dir, "link-to-main"));
  await fs.symlink("../outside/nowhere", path.join(dir, "dangling"));
  await fs.mkdir(path.join(dir, "empty-dir"));
  await fs.mkdir(path.join(dir, ".keel/scratch"), { recursive: true });
  await fs.writeFile(path.join(dir, ".keel/scratch/bash-1.log"), "scratch output\n");
  await fs.writeFile(path.join(dir, ".keel/.gitignore"), "*\n");
  return dir;
}

describe("workspace snapshots", () => {
  test("round trip: exact contents, modes, symlinks; scratch is not recorded; restore into another root", async () => {
    const ref = newRef();
    const dir = await makeWorkspace();
    const { snapshots } = open();
    const result = await snapshots.snapshot(ref, dir, { afterEntryId: "e1", afterSeq: 1 });
    expect(result.adopted).toBe(false);
    expect(result.record).toMatchObject({ afterEntryId: "e1", afterSeq: 1, files: 7 });

    const target = path.join(await tempDir("other-root"), "t", "s");
    const restored = await open().snapshots.restore(ref, result.record, target);
    expect(restored.files).toBe(7);
    const expected = (await describeTree(dir)).filter((line) => !line.startsWith(".keel/scratch"));
    expect(await describeTree(target)).toEqual(expected);
    expect(await fs.readlink(path.join(target, "link-to-main"))).toBe("src/main.ts");
    expect((await fs.stat(path.join(target, "run.sh"))).mode & 0o777).toBe(0o755);
  });

  test("identical files are stored once; a retry adopts the recorded snapshot", async () => {
    const ref = newRef();
    const dir = await makeWorkspace();
    const { snapshots, sent } = open();
    await snapshots.snapshot(ref, dir, { afterEntryId: "e1", afterSeq: 1 });
    const blobPuts = sent.filter(
      (c) => c.command === "PutObjectCommand" && c.key?.includes("/workspace/blobs/"),
    );
    // 7 files, main.ts and copy.ts identical: 6 blobs.
    expect(blobPuts).toHaveLength(6);

    const before = sent.length;
    const again = await snapshots.snapshot(ref, dir, { afterEntryId: "e1", afterSeq: 1 });
    expect(again.adopted).toBe(true);
    expect(countOf(sent.slice(before), "PutObjectCommand")).toBe(0);
  });

  test("a second snapshot after editing one file uploads that blob and the trees above it, and rehashes nothing else", async () => {
    const ref = newRef();
    const dir = await makeWorkspace();
    const { snapshots, sent } = open();
    await snapshots.snapshot(ref, dir, { afterEntryId: "e1", afterSeq: 1 });
    await fs.writeFile(path.join(dir, "src/nested/data.bin"), Buffer.from("changed bytes"));

    const before = sent.length;
    const second = await snapshots.snapshot(ref, dir, { afterEntryId: "e2", afterSeq: 2 });
    const puts = sent.slice(before).filter((c) => c.command === "PutObjectCommand");
    const kinds = puts.map((c) => (c.key ?? "").split("/workspace/")[1]?.split("/")[0]).sort();
    // One blob, the trees of src/nested, src and the root, and the snapshot record.
    expect(kinds).toEqual(["blobs", "snapshots", "trees", "trees", "trees"]);
    expect(second.hashedFiles).toBe(1);

    const target = path.join(await tempDir("second"), "ws");
    await open().snapshots.restore(ref, second.record, target);
    expect(await fs.readFile(path.join(target, "src/nested/data.bin"), "utf8")).toBe("changed bytes");
    // The first state is still restorable.
    const first = await snapshots.getRecord(ref, "e1");
    const old = path.join(await tempDir("first"), "ws");
    await open().snapshots.restore(ref, first ?? second.record, old);
    expect(await fs.readFile(path.join(old, "src/nested/data.bin"))).toEqual(
      Buffer.from([0, 1, 2, 255, 254]),
    );
  });

  test("the state of an entry is its nearest snapshotted ancestor's", async () => {
    const ref = newRef();
    const dir = await makeWorkspace();
    const { snapshots } = open();
    await snapshots.snapshot(ref, dir, { afterEntryId: "e2", afterSeq: 2 });
    await fs.writeFile(path.join(dir, "README.md"), "# changed\n");
    await snapshots.snapshot(ref, dir, { afterEntryId: "e5", afterSeq: 5 });
    expect((await snapshots.findForEntry(ref, ["e4", "e3", "e2", "e1"]))?.afterEntryId).toBe("e2");
    expect((await snapshots.findForEntry(ref, ["e6", "e5", "e4"]))?.afterEntryId).toBe("e5");
    expect(await snapshots.findForEntry(ref, ["e1", "e0"])).toBeUndefined();
  });

  test("in a group of entries (one batch's tool results) the newest snapshot applies, not the nearest", async () => {
    const ref = newRef();
    const dir = await makeWorkspace();
    const { snapshots } = open();
    // The later call of a parallel batch finished first: its result's snapshot is the older one.
    await snapshots.snapshot(ref, dir, { afterEntryId: "r2", afterSeq: 4 });
    await fs.writeFile(path.join(dir, "README.md"), "# both calls\n");
    const newest = await snapshots.snapshot(ref, dir, { afterEntryId: "r1", afterSeq: 3 });
    expect((await snapshots.findForEntry(ref, [["r2", "r1"], "a1"]))?.root).toBe(newest.record.root);
    expect((await snapshots.findForEntry(ref, ["r2", "r1", "a1"]))?.afterEntryId).toBe("r2");
    expect(await snapshots.findForEntry(ref, [["x2", "x1"], "a1"])).toBeUndefined();
  });

  test("with replaceStale, an entry's record of another state is replaced; a retry adopts the new one", async () => {
    const ref = newRef();
    const dir = await makeWorkspace();
    const { snapshots } = open();
    const early = await snapshots.snapshot(ref, dir, { afterEntryId: "r2", afterSeq: 4 });
    await fs.writeFile(path.join(dir, "README.md"), "# changed by a parallel call\n");
    // Without it the stale record is adopted (a retried snapshot of the same state).
    const adopted = await snapshots.snapshot(ref, dir, { afterEntryId: "r2", afterSeq: 4 });
    expect(adopted).toMatchObject({ adopted: true, record: { root: early.record.root } });

    const replaced = await snapshots.snapshot(ref, dir, {
      afterEntryId: "r2",
      afterSeq: 4,
      replaceStale: true,
    });
    expect(replaced.adopted).toBe(false);
    expect(replaced.record.root).not.toBe(early.record.root);
    expect(replaced.record.createdAt > early.record.createdAt).toBe(true);
    expect(await snapshots.getRecord(ref, "r2")).toEqual(replaced.record);

    const retry = await snapshots.snapshot(ref, dir, { afterEntryId: "r2", afterSeq: 4, replaceStale: true });
    expect(retry).toMatchObject({ adopted: true, uploadedObjects: 0, record: replaced.record });
    const target = path.join(await tempDir("replaced"), "ws");
    await open().snapshots.restore(ref, replaced.record, target);
    expect(await fs.readFile(path.join(target, "README.md"), "utf8")).toBe("# changed by a parallel call\n");
  });

  test("parallel snapshots of one workspace run one after the other, in call order", async () => {
    const ref = newRef();
    const dir = await makeWorkspace();
    const { snapshots } = open();
    const results = await Promise.all(
      ["p1", "p2", "p3"].map((id, seq) => snapshots.snapshot(ref, dir, { afterEntryId: id, afterSeq: seq })),
    );
    const created = results.map((result) => result.record.createdAt);
    expect([...created].sort()).toEqual(created);
    expect(new Set(created).size).toBe(3);
  });

  test("restoring replaces the target's contents and leaves an index that makes the next snapshot cheap", async () => {
    const ref = newRef();
    const dir = await makeWorkspace();
    const { snapshots } = open();
    const { record } = await snapshots.snapshot(ref, dir, { afterEntryId: "e1", afterSeq: 1 });
    const target = path.join(await tempDir("replace"), "ws");
    await fs.mkdir(target, { recursive: true });
    await fs.writeFile(path.join(target, "stale.txt"), "from another branch\n");

    const fresh = open();
    await fresh.snapshots.restore(ref, record, target);
    await expect(fs.stat(path.join(target, "stale.txt"))).rejects.toThrow();
    const before = fresh.sent.length;
    const next = await fresh.snapshots.snapshot(ref, target, { afterEntryId: "e2", afterSeq: 2 });
    expect(next.hashedFiles).toBe(0);
    // Nothing changed: only the record of e2 is written.
    expect(countOf(fresh.sent.slice(before), "PutObjectCommand")).toBe(1);
    expect(next.record.root).toBe(record.root);
  });

  test("a workspace over the size cap is refused with a clear error and nothing is recorded", async () => {
    const ref = newRef();
    const dir = await makeWorkspace();
    const { snapshots } = open();
    await expect(
      snapshots.snapshot(ref, dir, { afterEntryId: "e1", afterSeq: 1, maxBytes: 10 }),
    ).rejects.toThrow(WorkspaceTooLargeError);
    expect(await snapshots.getRecord(ref, "e1")).toBeUndefined();
  });
});
