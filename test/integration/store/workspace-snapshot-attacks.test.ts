/**
 * Workspace snapshots against a hostile workspace and a tampered store (real S3 server): a file
 * swapped for a link to a host secret while snapshots run, a blob overwritten in S3, setuid and
 * setgid modes, and a crafted tree that would write through a link. Every canary lives outside
 * the workspace and must never reach a blob or be written.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { sha256Hex as sha256 } from "../../../src/store/digest";
import { CorruptObjectError } from "../../../src/store/session-errors";
import { workspaceBlobKey, workspaceTreeKey } from "../../../src/store/session-keys";
import { type SnapshotRecord, WorkspaceSnapshots } from "../../../src/store/workspace-snapshots";
import { indexPathOf, type LocalIndex, type TreeEntry } from "../../../src/store/workspace-tree";
import { s3Client, s3Settings, testTmpDir } from "../../support/integration-env";
import { newRef } from "./store-fixtures";

const clients: S3Client[] = [];
afterAll(() => {
  for (const client of clients) client.destroy();
});

function open(): { snapshots: WorkspaceSnapshots; client: S3Client } {
  const client = s3Client();
  clients.push(client);
  return { snapshots: new WorkspaceSnapshots(client, s3Settings()), client };
}

const tempDir = (name: string) => fs.mkdtemp(path.join(testTmpDir(), `${name}-`));

/** Every object under `prefix`, key and bytes. */
async function objectsUnder(client: S3Client, prefix: string): Promise<Array<{ key: string; body: Buffer }>> {
  const { bucket } = s3Settings();
  const objects: Array<{ key: string; body: Buffer }> = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const { Key } of page.Contents ?? []) {
      if (!Key) continue;
      const response = await client.send(new GetObjectCommand({ Bucket: bucket, Key }));
      objects.push({ key: Key, body: Buffer.from((await response.Body?.transformToByteArray()) ?? []) });
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return objects;
}

/** The folder of a session's blobs or trees (the key of a hash, without the hash). */
const folderOf = (key: string) => key.slice(0, key.lastIndexOf("/") + 1);
const ZERO_HASH = "0".repeat(64);

/**
 * Another process that swaps each `x<i>` of `dir`, as fast as it can and atomically (rename),
 * between a regular file and a link to `targets[i]`.
 */
function startSwapping(dir: string, targets: string[]): ChildProcess {
  const script = `
    const fs = require("node:fs");
    const [dir, ...targets] = process.argv.slice(1);
    for (;;) {
      targets.forEach((target, i) => {
        try {
          fs.symlinkSync(target, dir + "/.link" + i);
          fs.renameSync(dir + "/.link" + i, dir + "/x" + i);
          fs.writeFileSync(dir + "/.file" + i, "inside " + i + "\\n");
          fs.renameSync(dir + "/.file" + i, dir + "/x" + i);
        } catch {}
      });
    }`;
  return spawn(process.execPath, ["-e", script, dir, ...targets], { stdio: "ignore" });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

describe("a workspace file swapped for a link to a host secret while snapshots run", () => {
  const children: ChildProcess[] = [];
  afterEach(async () => {
    await Promise.all(children.splice(0).map(stop));
  });

  test("no stored blob ever holds the host file, another process's environment or the worker's own", async () => {
    const ref = newRef();
    const base = await tempDir("race");
    const dir = path.join(base, "workspace");
    await fs.mkdir(dir);
    await fs.writeFile(path.join(dir, "README.md"), "# a workspace\n");
    const fileCanary = `KEEL_CANARY_FILE=sk-file-${randomBytes(12).toString("hex")}`;
    const envCanary = `sk-env-${randomBytes(12).toString("hex")}`;
    const canaryFile = path.join(base, "host-secret.env");
    await fs.writeFile(canaryFile, `${fileCanary}\n`);
    // A process holding a provider-key-like variable, as the worker does.
    const holder = spawn("sleep", ["600"], { env: { KEEL_CANARY_KEY: envCanary }, stdio: "ignore" });
    children.push(holder);
    const ownEnvironment = await fs.readFile("/proc/self/environ");
    const targets = [canaryFile, `/proc/${holder.pid}/environ`, "/proc/self/environ"];
    children.push(startSwapping(dir, targets));

    const { snapshots, client } = open();
    const snapshotsTaken = 60;
    // A snapshot that fails is counted, not fatal: what must never happen is a blob of the host's.
    const failures: string[] = [];
    for (let seq = 1; seq <= snapshotsTaken; seq++) {
      await snapshots
        .snapshot(ref, dir, { afterEntryId: `e${seq}`, afterSeq: seq })
        .catch((error: unknown) => failures.push(String(error)));
    }
    await Promise.all(children.splice(0).map(stop));

    const blobs = await objectsUnder(client, folderOf(workspaceBlobKey(s3Settings().prefix, ref, ZERO_HASH)));
    const holds = (body: Buffer) =>
      [fileCanary, envCanary]
        .filter((canary) => body.includes(canary))
        .concat(
          ownEnvironment.length > 0 && body.includes(ownEnvironment) ? ["the worker's environment"] : [],
        );
    const leaks = blobs.flatMap(({ key, body }) => holds(body).map((what) => `${key}: ${what}`));
    expect(leaks).toEqual([]);
    // Every blob is stored under the hash of its own bytes.
    expect(blobs.filter(({ key, body }) => !key.endsWith(sha256(body))).map(({ key }) => key)).toEqual([]);
    // The race was real: the names were recorded as files and as links to the host.
    const trees = await objectsUnder(client, folderOf(workspaceTreeKey(s3Settings().prefix, ref, ZERO_HASH)));
    const entries = trees.flatMap(
      ({ body }) => (JSON.parse(gunzipSync(body).toString("utf8")) as { entries: TreeEntry[] }).entries,
    );
    const swapped = entries.filter((entry) => /^x\d$/.test(entry.name));
    expect(swapped.some((entry) => entry.type === "file")).toBe(true);
    expect(swapped.some((entry) => entry.type === "symlink" && entry.target === canaryFile)).toBe(true);
    expect(blobs.some(({ body }) => body.toString().startsWith("inside "))).toBe(true);
    // And the scan took the swaps in its stride.
    expect(failures).toEqual([]);
  }, 120_000);
});

/** A workspace with one file, snapshotted; and a copy restored from it. */
async function snapshotted() {
  const ref = newRef();
  const dir = path.join(await tempDir("ws"), "workspace");
  await fs.mkdir(dir);
  await fs.writeFile(path.join(dir, "notes.txt"), "the recorded bytes\n");
  const { snapshots, client } = open();
  const { record } = await snapshots.snapshot(ref, dir, { afterEntryId: "e1", afterSeq: 1 });
  return { ref, dir, snapshots, client, record };
}

async function put(client: S3Client, key: string, body: Uint8Array | string): Promise<void> {
  await client.send(new PutObjectCommand({ Bucket: s3Settings().bucket, Key: key, Body: body }));
}

/** Stores `entries` as a tree object of `ref` (as a writer with access to the bucket could); returns its hash. */
async function putTree(
  client: S3Client,
  ref: ReturnType<typeof newRef>,
  entries: unknown[],
): Promise<string> {
  const body = JSON.stringify({ version: 1, entries });
  const hash = sha256(body);
  await put(client, workspaceTreeKey(s3Settings().prefix, ref, hash), gzipSync(body));
  return hash;
}

const recordOf = (root: string): SnapshotRecord => ({
  version: 1,
  afterEntryId: "crafted",
  afterSeq: 1,
  root,
  files: 1,
  bytes: 1,
  createdAt: new Date().toISOString(),
});

describe("restores refuse what the store should not hold", () => {
  test("a blob overwritten in S3 is refused; the old workspace stays and no staging is left", async () => {
    const { ref, snapshots, client, record } = await snapshotted();
    const target = path.join(await tempDir("target"), "ws");
    await fs.mkdir(target);
    await fs.writeFile(path.join(target, "before.txt"), "the workspace before the restore\n");
    const blobHash = sha256("the recorded bytes\n");
    await put(client, workspaceBlobKey(s3Settings().prefix, ref, blobHash), "tampered bytes\n");

    await expect(snapshots.restore(ref, record, target)).rejects.toThrow(CorruptObjectError);
    expect(await fs.readdir(target)).toEqual(["before.txt"]);
    expect(await fs.readdir(path.dirname(target))).toEqual(["ws"]);
  });

  test("setuid, setgid and sticky bits are not recorded, and not restored from a tree that has them", async () => {
    const ref = newRef();
    const dir = path.join(await tempDir("modes"), "workspace");
    await fs.mkdir(path.join(dir, "shared"), { recursive: true });
    for (const [name, mode] of [
      ["suid", 0o4755],
      ["sgid", 0o2755],
    ] as const) {
      await fs.writeFile(path.join(dir, name), "#!/bin/sh\nid\n");
      await fs.chmod(path.join(dir, name), mode);
      expect((await fs.stat(path.join(dir, name))).mode & 0o7777).toBe(mode);
    }
    await fs.chmod(path.join(dir, "shared"), 0o1777);
    const { snapshots, client } = open();
    const { record } = await snapshots.snapshot(ref, dir, { afterEntryId: "e1", afterSeq: 1 });
    const target = path.join(await tempDir("modes-restored"), "ws");
    await snapshots.restore(ref, record, target);
    const modeOf = async (name: string) => (await fs.stat(path.join(target, name))).mode & 0o7777;
    expect(await modeOf("suid")).toBe(0o755);
    expect(await modeOf("sgid")).toBe(0o755);
    expect(await modeOf("shared")).toBe(0o777);

    // A tree recorded before the scan masked modes (or written by anyone else) still restores without them.
    const body = "#!/bin/sh\nid\n";
    await put(client, workspaceBlobKey(s3Settings().prefix, ref, sha256(body)), body);
    const root = await putTree(client, ref, [
      { name: "suid", type: "file", mode: 0o6755, size: body.length, hash: sha256(body) },
    ]);
    const crafted = path.join(await tempDir("modes-crafted"), "ws");
    await snapshots.restore(ref, recordOf(root), crafted);
    expect((await fs.stat(path.join(crafted, "suid"))).mode & 0o7777).toBe(0o755);
  });

  test("a tree that names a link and a folder alike cannot write through the link", async () => {
    const ref = newRef();
    const { snapshots, client } = open();
    const outside = await tempDir("host-dir");
    const body = "planted\n";
    await put(client, workspaceBlobKey(s3Settings().prefix, ref, sha256(body)), body);
    const inner = await putTree(client, ref, [
      { name: "planted", type: "file", mode: 0o644, size: body.length, hash: sha256(body) },
    ]);
    const root = await putTree(client, ref, [
      { name: "x", type: "symlink", target: outside },
      { name: "x", type: "dir", mode: 0o755, tree: inner },
    ]);
    const target = path.join(await tempDir("crafted"), "ws");
    await expect(snapshots.restore(ref, recordOf(root), target)).rejects.toThrow();
    expect(await fs.readdir(outside)).toEqual([]);
    expect(await fs.readdir(path.dirname(target))).toEqual([]);
  });
});

describe("what the scan stores is the bytes it read", () => {
  test("a cached hash that is not stored yet is not trusted: the file is read and stored under its own hash", async () => {
    const ref = newRef();
    const dir = path.join(await tempDir("cache"), "workspace");
    await fs.mkdir(dir);
    await fs.writeFile(path.join(dir, "a.txt"), "the real bytes\n");
    const stats = await fs.stat(path.join(dir, "a.txt"));
    // An index whose entry matches the file's stats but names other bytes, none of them stored
    // (as after a fork's restore, with a file changed behind the stats).
    const wrong = sha256("other bytes\n");
    const index: LocalIndex = {
      version: 1,
      files: {
        "a.txt": {
          size: stats.size,
          mtimeMs: stats.mtimeMs,
          ctimeMs: stats.ctimeMs,
          ino: stats.ino,
          hash: wrong,
        },
      },
      stored: [],
    };
    await fs.writeFile(indexPathOf(dir), JSON.stringify(index));
    const { snapshots, client } = open();
    const { record } = await snapshots.snapshot(ref, dir, { afterEntryId: "e1", afterSeq: 1 });

    const blobs = await objectsUnder(client, folderOf(workspaceBlobKey(s3Settings().prefix, ref, ZERO_HASH)));
    expect(blobs.map(({ key }) => key.slice(-64))).toEqual([sha256("the real bytes\n")]);
    const target = path.join(await tempDir("cache-restored"), "ws");
    await snapshots.restore(ref, record, target);
    expect(await fs.readFile(path.join(target, "a.txt"), "utf8")).toBe("the real bytes\n");
  });

  test("a file larger than a whole read (hashed as it streams, then sent) round-trips", async () => {
    const ref = newRef();
    const dir = path.join(await tempDir("large"), "workspace");
    await fs.mkdir(dir);
    const large = randomBytes(9 * 1024 ** 2 + 17);
    await fs.writeFile(path.join(dir, "large.bin"), large);
    const { snapshots } = open();
    const first = await snapshots.snapshot(ref, dir, { afterEntryId: "e1", afterSeq: 1 });
    expect(first.record).toMatchObject({ files: 1, bytes: large.length });
    const target = path.join(await tempDir("large-restored"), "ws");
    await snapshots.restore(ref, first.record, target);
    expect((await fs.readFile(path.join(target, "large.bin"))).equals(large)).toBe(true);
    // Stored now: a second snapshot of the unchanged file neither reads nor sends it.
    const second = await snapshots.snapshot(ref, dir, { afterEntryId: "e2", afterSeq: 2 });
    expect(second).toMatchObject({ hashedFiles: 0, uploadedObjects: 1 });
  });
});
