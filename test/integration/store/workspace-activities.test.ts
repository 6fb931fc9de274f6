/**
 * The workspace activities over the real S3 server and real directories: snapshot after a batch,
 * restore on a worker that does not have the workspace (claimWorkspace with leafId), restore to
 * an earlier entry (branch) and into another session (fork), idle eviction. Run in Temporal's activity test
 * environment (heartbeats and Context); the run workflow that calls them is wired elsewhere.
 */

import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { MockActivityEnvironment } from "@temporalio/testing";
import { type WorkspaceDeps, workspaceActivities } from "../../../src/activities/workspace-activities";
import { evictIdleWorkspaces, usingWorkspace } from "../../../src/activities/workspace-eviction";
import { holderEpochPathOf, whileWorking } from "../../../src/activities/workspace-holder";
import { SessionStore } from "../../../src/store/session-store";
import { WorkspaceSnapshots } from "../../../src/store/workspace-snapshots";
import { DEFAULT_SANDBOX_POLICY } from "../../../src/tools/sandbox";
import { workspaceFor } from "../../../src/tools/workspace";
import { s3Client, s3Settings, testTmpDir } from "../../support/integration-env";
import { entryAt, headerFor, newRef } from "./store-fixtures";

const clients: S3Client[] = [];
afterAll(() => {
  for (const client of clients) client.destroy();
});

/**
 * The activities of one "worker": its own workspace root, task queue and S3 client. `shared`: a
 * worker of the shared queue (a Lambda execution environment: every one has the same queue).
 */
async function worker(name: string, { shared = false }: { shared?: boolean } = {}) {
  const client = s3Client();
  clients.push(client);
  const deps: WorkspaceDeps = {
    store: new SessionStore(client, s3Settings()),
    snapshots: new WorkspaceSnapshots(client, s3Settings()),
    snapshotMaxBytes: 1024 ** 2,
    workspaceRoot: await fs.mkdtemp(path.join(testTmpDir(), `${name}-`)),
    workerTaskQueue: shared ? "keel/shared" : `keel/worker/${name}`,
    sandbox: DEFAULT_SANDBOX_POLICY,
    sharedTaskQueue: "keel/shared",
  };
  const activities = workspaceActivities(deps);
  const env = new MockActivityEnvironment({ taskQueue: deps.workerTaskQueue });
  // `run` types its result as unknown; each activity's own result type is restored here.
  const inContext =
    <I, R>(fn: (input: I) => Promise<R>) =>
    (input: I): Promise<R> =>
      env.run(fn, input) as Promise<R>;
  return {
    deps,
    dirOf: (ref: { tenantId: string; sessionId: string }) =>
      workspaceFor(deps.workspaceRoot, ref.tenantId, ref.sessionId).dir,
    claim: inContext(activities.claimWorkspace),
    snapshot: inContext(activities.snapshotWorkspace),
    restore: inContext(activities.restoreWorkspace),
  };
}

/** A session with entries e0…e{count-1}, each the parent of the next. */
async function sessionWith(count: number) {
  const ref = newRef();
  const client = s3Client();
  clients.push(client);
  const store = new SessionStore(client, s3Settings());
  await store.createSession(ref, headerFor(ref));
  for (let seq = 0; seq < count; seq++) await store.putEntry(ref, seq, entryAt(seq));
  return ref;
}

test("a worker without the workspace restores the leaf's nearest snapshot; branch and fork restore other entries", async () => {
  const ref = await sessionWith(6);
  const first = await worker("first");
  expect(await first.claim({ ...ref, leafId: "e0" })).toMatchObject({ taskQueue: "keel/worker/first" });
  const dir = first.dirOf(ref);
  await fs.writeFile(path.join(dir, "notes.md"), "version 1\n");
  const one = await first.snapshot({ ...ref, afterEntryId: "e1", afterSeq: 1 });
  expect(one).toMatchObject({ adopted: false, files: 1 });
  expect(await first.snapshot({ ...ref, afterEntryId: "e1", afterSeq: 1 })).toMatchObject({
    adopted: true,
    uploadedObjects: 0,
  });
  await fs.writeFile(path.join(dir, "notes.md"), "version 2\n");
  await fs.symlink("notes.md", path.join(dir, "latest"));
  await first.snapshot({ ...ref, afterEntryId: "e3", afterSeq: 3 });

  // The first worker is gone; another claims the session at leaf e5 (nearest snapshot: e3).
  const second = await worker("second");
  const claimed = await second.claim({ ...ref, leafId: "e5", source: { type: "empty" } });
  expect(claimed).toMatchObject({ taskQueue: "keel/worker/second", restoredFrom: "e3" });
  expect(await fs.readFile(path.join(second.dirOf(ref), "notes.md"), "utf8")).toBe("version 2\n");
  expect(await fs.readlink(path.join(second.dirOf(ref), "latest"))).toBe("notes.md");

  // Branch back to e2: the state after e1.
  expect(await second.restore({ ref, entryId: "e2" })).toMatchObject({
    restored: true,
    snapshotEntryId: "e1",
  });
  expect(await fs.readFile(path.join(second.dirOf(ref), "notes.md"), "utf8")).toBe("version 1\n");
  await expect(fs.lstat(path.join(second.dirOf(ref), "latest"))).rejects.toThrow();

  // Before any snapshot there is nothing to restore: the workspace is left as it is.
  expect(await second.restore({ ref, entryId: "e0" })).toEqual({ restored: false });

  // Fork: a new session gets the state of e4 of the original one, then snapshots on its own.
  const fork = newRef();
  expect(await second.restore({ ref: fork, from: ref, entryId: "e4" })).toMatchObject({
    restored: true,
    snapshotEntryId: "e3",
  });
  expect(await fs.readFile(path.join(second.dirOf(fork), "notes.md"), "utf8")).toBe("version 2\n");
  const forked = await second.snapshot({ ...fork, afterEntryId: "f1", afterSeq: 1 });
  // The fork's own prefix holds its objects: the blob, the root tree and the record.
  expect(forked.uploadedObjects).toBe(3);
});

test("an unknown entry and an oversized workspace fail clearly without retrying", async () => {
  const ref = await sessionWith(2);
  const one = await worker("limits");
  await one.claim({ ...ref, leafId: "e1" });
  await expect(one.claim({ ...ref, leafId: "nope" })).resolves.toBeDefined(); // workspace exists: kept
  // A worker without the workspace and a leaf it cannot read yet starts from the source.
  const other = await worker("unknown-leaf");
  expect(await other.claim({ ...ref, leafId: "not-yet-visible" })).not.toHaveProperty("restoredFrom");
  await expect(one.restore({ ref, entryId: "nope" })).rejects.toMatchObject({
    message: expect.stringMatching(/not in this session/),
    nonRetryable: true,
  });
  await fs.writeFile(path.join(one.dirOf(ref), "big.bin"), Buffer.alloc(2 * 1024 ** 2));
  await expect(one.snapshot({ ...ref, afterEntryId: "e1", afterSeq: 1 })).rejects.toMatchObject({
    message: expect.stringMatching(/snapshot cap/),
    type: "WorkspaceTooLarge",
    nonRetryable: true,
  });
});

test("idle eviction removes only idle, fully snapshotted workspaces of this worker; a claim restores them", async () => {
  const ref = await sessionWith(3);
  const unsaved = await sessionWith(3);
  const one = await worker("evicting");
  for (const session of [ref, unsaved]) await one.claim({ ...session, leafId: "e0" });
  await fs.writeFile(path.join(one.dirOf(ref), "kept.txt"), "recorded\n");
  await one.snapshot({ ...ref, afterEntryId: "e2", afterSeq: 2 });
  await fs.writeFile(path.join(one.dirOf(unsaved), "draft.txt"), "never snapshotted\n");
  await one.snapshot({ ...unsaved, afterEntryId: "e1", afterSeq: 1 });
  await fs.writeFile(path.join(one.dirOf(unsaved), "draft.txt"), "changed after the snapshot\n");

  const evict = (now: number) =>
    evictIdleWorkspaces({
      root: one.deps.workspaceRoot,
      ownerId: one.deps.workerTaskQueue,
      idleMs: 60_000,
      snapshots: one.deps.snapshots,
      now,
    });
  expect(await evict(Date.now())).toEqual([]); // used just now
  // A call in progress (a command running longer than the idle period) keeps its workspace.
  let finish = () => {};
  const call = usingWorkspace(
    workspaceFor(one.deps.workspaceRoot, ref.tenantId, ref.sessionId),
    () => new Promise<void>((done) => (finish = done)),
  );
  expect(await evict(Date.now() + 120_000)).toEqual([]);
  finish();
  await call;
  expect(await evict(Date.now() + 120_000)).toEqual([one.dirOf(ref)]);
  await expect(fs.stat(one.dirOf(ref))).rejects.toThrow();
  expect(await fs.readFile(path.join(one.dirOf(unsaved), "draft.txt"), "utf8")).toBe(
    "changed after the snapshot\n",
  );

  expect(await one.claim({ ...ref, leafId: "e2" })).toMatchObject({ restoredFrom: "e2" });
  expect(await fs.readFile(path.join(one.dirOf(ref), "kept.txt"), "utf8")).toBe("recorded\n");
});

const read = (dir: string, name = "a.txt") => fs.readFile(path.join(dir, name), "utf8");

test("a disk's copy from an earlier hold is replaced when another disk held the workspace since; a current copy is kept as it is", async () => {
  const ref = await sessionWith(5);
  const first = await worker("holder-first");
  const second = await worker("holder-second");
  await first.claim({ ...ref, leafId: "e0" });
  await fs.writeFile(path.join(first.dirOf(ref), "a.txt"), "first version\n");
  await first.snapshot({ ...ref, afterEntryId: "e1", afterSeq: 1 });

  expect(await second.claim({ ...ref, leafId: "e1" })).toMatchObject({ restoredFrom: "e1" });
  await fs.writeFile(path.join(second.dirOf(ref), "a.txt"), "second version\n");
  await second.snapshot({ ...ref, afterEntryId: "e2", afterSeq: 2 });

  // The first disk still has its copy of e1: its claim replaces it with the state of e2.
  expect(await read(first.dirOf(ref))).toBe("first version\n");
  expect(await first.claim({ ...ref, leafId: "e2" })).toMatchObject({ restoredFrom: "e2" });
  expect(await read(first.dirOf(ref))).toBe("second version\n");

  // Its copy is current now: a file not yet recorded stays through the next claim.
  await fs.writeFile(path.join(first.dirOf(ref), "draft.txt"), "not snapshotted\n");
  expect(await first.claim({ ...ref, leafId: "e2" })).not.toHaveProperty("restoredFrom");
  expect(await read(first.dirOf(ref), "draft.txt")).toBe("not snapshotted\n");

  // The second disk's copy is the stale one now, and a call of its process still works in it:
  // it is not removed under the call; the claim fails (and is retried by Temporal).
  await expect(
    whileWorking(workspaceFor(second.deps.workspaceRoot, ref.tenantId, ref.sessionId), () =>
      second.claim({ ...ref, leafId: "e2" }),
    ),
  ).rejects.toMatchObject({
    message: expect.stringMatching(/stale and a call of this worker still works in it/),
  });
  expect(await read(second.dirOf(ref))).toBe("second version\n");
});

test("a copy made before holder epochs existed is adopted as it is, unsnapshotted files included", async () => {
  const ref = await sessionWith(2);
  const one = await worker("holder-adopt");
  const dir = one.dirOf(ref);
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(path.join(dir, "a.txt"), "from an earlier release\n");
  expect(await one.claim({ ...ref, leafId: "e1" })).not.toHaveProperty("restoredFrom");
  expect(await read(dir)).toBe("from an earlier release\n");
  expect(await fs.readFile(holderEpochPathOf({ dir }), "utf8")).toMatch(/"epoch"/);
});

test("on the shared queue, a snapshot and a branch's restore taken by an environment with a stale copy record and leave the current state", async () => {
  const ref = await sessionWith(6);
  const x = await worker("shared-x", { shared: true });
  const y = await worker("shared-y", { shared: true });
  await x.claim({ ...ref, leafId: "e0" });
  await fs.writeFile(path.join(x.dirOf(ref), "a.txt"), "first version\n");
  await x.snapshot({ ...ref, afterEntryId: "e1", afterSeq: 1 });

  // Environment Y takes the workspace and edits it; X keeps its copy of e1.
  await y.claim({ ...ref, leafId: "e1" });
  await fs.writeFile(path.join(y.dirOf(ref), "a.txt"), "second version\n");
  await y.snapshot({ ...ref, afterEntryId: "e2", afterSeq: 2 });

  // The snapshot of e3 lands on X: it records the current state (e2's), not X's old copy.
  await x.snapshot({ ...ref, afterEntryId: "e3", afterSeq: 3 });
  const fresh = await worker("shared-fresh");
  expect(await fresh.claim({ ...ref, leafId: "e4" })).toMatchObject({ restoredFrom: "e3" });
  expect(await read(fresh.dirOf(ref))).toBe("second version\n");
  // An environment that never served this tenant (no folder of it on its disk) takes one too.
  const z = await worker("shared-z", { shared: true });
  await z.snapshot({ ...ref, afterEntryId: "e4", afterSeq: 4 });
  expect(await read(z.dirOf(ref))).toBe("second version\n");

  // A branch back to e1 restored on Y (X held the workspace last): Y's copy becomes the current
  // one, so the next snapshot on Y records it instead of replacing it.
  await y.restore({ ref, entryId: "e1" });
  expect(await read(y.dirOf(ref))).toBe("first version\n");
  await y.snapshot({ ...ref, afterEntryId: "e5", afterSeq: 5 });
  expect(await read(y.dirOf(ref))).toBe("first version\n");
  const later = await worker("shared-later");
  expect(await later.claim({ ...ref, leafId: "e5" })).toMatchObject({ restoredFrom: "e5" });
  expect(await read(later.dirOf(ref))).toBe("first version\n");
});
