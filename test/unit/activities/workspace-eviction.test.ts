/**
 * Eviction removes a workspace without following the links in it: a link to a host directory
 * (at the top or deeper down) is unlinked and the directory it names is left whole.
 */
import { mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { evictIdleWorkspaces } from "../../../src/activities/workspace-eviction";
import { tempDirPerTest } from "../../support/temp-dir";

const tempDir = tempDirPerTest("keel-evict-");

test("evicting a workspace that links to a host directory leaves that directory intact", async () => {
  const host = join(tempDir(), "host");
  mkdirSync(join(host, "sub"), { recursive: true });
  writeFileSync(join(host, "secret.txt"), "host file\n");
  writeFileSync(join(host, "sub", "deeper.txt"), "host file below\n");
  const root = join(tempDir(), "root");
  const dir = join(root, "tenant", "session");
  mkdirSync(join(dir, "nested"), { recursive: true });
  writeFileSync(join(dir, "own.txt"), "workspace file\n");
  symlinkSync(host, join(dir, "host-link"));
  symlinkSync(host, join(dir, "nested", "host-link"));
  symlinkSync(join(host, "secret.txt"), join(dir, "file-link"));
  writeFileSync(`${dir}.lock`, JSON.stringify({ ownerId: "queue" }));
  const old = new Date(Date.now() - 3_600_000);
  utimesSync(`${dir}.lock`, old, old);

  const evicted = await evictIdleWorkspaces({
    root,
    ownerId: "queue",
    idleMs: 60_000,
    snapshots: { matchesLastSnapshot: async () => true },
  });

  expect(evicted).toEqual([dir]);
  expect(readdirSync(join(root, "tenant"))).toEqual([]);
  expect(readdirSync(host).sort()).toEqual(["secret.txt", "sub"]);
  expect(readFileSync(join(host, "secret.txt"), "utf8")).toBe("host file\n");
  expect(readFileSync(join(host, "sub", "deeper.txt"), "utf8")).toBe("host file below\n");
});
