// Pure tests of the key layout (no server needed; kept next to the store's integration tests).
import {
  chunkKey,
  entryKey,
  formatSeq,
  headerKey,
  InvalidIdError,
  InvalidSequenceError,
  MAX_SEQ,
  parseSessionObjectKey,
  sessionIdOfFolder,
  sessionPrefix,
  snapshotEntryIdOfKey,
  tenantSessionsPrefix,
  workspaceBlobKey,
  workspaceSnapshotKey,
  workspaceSnapshotsPrefix,
  workspaceTreeKey,
} from "../../../src/store/session-keys";

const ref = { tenantId: "acme", sessionId: "s_01-a" };

describe("session key layout", () => {
  test("keys live under the prefix, tenant and session, with 12-digit sequence numbers", () => {
    expect(headerKey("keel/", ref)).toBe("keel/tenants/acme/sessions/s_01-a/header.json");
    expect(entryKey("keel/", ref, 42)).toBe("keel/tenants/acme/sessions/s_01-a/entries/000000000042.json");
    expect(chunkKey("", ref, 256)).toBe("tenants/acme/sessions/s_01-a/chunks/000000000256.jsonl");
    expect(formatSeq(MAX_SEQ)).toBe("999999999999");
  });

  test("zero-padding keeps lexical key order equal to numeric order", () => {
    const seqs = [0, 9, 10, 99, 100, 255, 256, 1_000_000];
    const keys = seqs.map((seq) => entryKey("", ref, seq));
    expect([...keys].sort()).toEqual(keys);
  });

  test.each(["../x", "a/b", "", "a".repeat(129), "%2e%2e", "..", ".", "_lead", "a b", "a\nb", "é", "a.b"])(
    "id %j is refused for tenant and session",
    (bad) => {
      expect(() => headerKey("", { tenantId: bad, sessionId: "s" })).toThrow(InvalidIdError);
      expect(() => entryKey("", { tenantId: "t", sessionId: bad }, 0)).toThrow(InvalidIdError);
      expect(() => tenantSessionsPrefix("", bad)).toThrow(InvalidIdError);
    },
  );

  test("ids of up to 128 characters are accepted", () => {
    const long = "a".repeat(128);
    expect(sessionPrefix("", { tenantId: long, sessionId: long })).toBe(`tenants/${long}/sessions/${long}/`);
  });

  test.each([-1, 1.5, Number.NaN, MAX_SEQ + 1, Number.MAX_SAFE_INTEGER])(
    "sequence number %p is refused",
    (bad) => {
      expect(() => entryKey("", ref, bad)).toThrow(InvalidSequenceError);
    },
  );

  test("object keys parse back; keys outside the layout do not", () => {
    const folder = sessionPrefix("p/", ref);
    expect(parseSessionObjectKey(folder, headerKey("p/", ref))).toEqual({ kind: "header" });
    expect(parseSessionObjectKey(folder, entryKey("p/", ref, 7))).toEqual({ kind: "entry", seq: 7 });
    expect(parseSessionObjectKey(folder, chunkKey("p/", ref, 512))).toEqual({ kind: "chunk", firstSeq: 512 });
    expect(parseSessionObjectKey(folder, `${folder}entries/7.json`)).toBeNull();
    expect(parseSessionObjectKey(folder, `${folder}entries/000000000007.json.tmp`)).toBeNull();
    expect(parseSessionObjectKey(folder, "p/tenants/other/sessions/s/header.json")).toBeNull();
  });

  test("session folders of a delimited listing map back to valid ids only", () => {
    const tenantFolder = tenantSessionsPrefix("", "acme");
    expect(sessionIdOfFolder(tenantFolder, `${tenantFolder}s1/`)).toBe("s1");
    expect(sessionIdOfFolder(tenantFolder, `${tenantFolder}..%2f/`)).toBeNull();
    expect(sessionIdOfFolder(tenantFolder, "tenants/other/sessions/s1/")).toBeNull();
  });
});

describe("workspace snapshot keys", () => {
  const hash = "a".repeat(64);
  test("blobs, trees and snapshot records live under the session folder", () => {
    expect(workspaceBlobKey("keel/", ref, hash)).toBe(
      `keel/tenants/acme/sessions/s_01-a/workspace/blobs/${hash}`,
    );
    expect(workspaceTreeKey("keel/", ref, hash)).toBe(
      `keel/tenants/acme/sessions/s_01-a/workspace/trees/${hash}.json.gz`,
    );
    const key = workspaceSnapshotKey("keel/", ref, "0123abcd0123abcd");
    expect(key).toBe("keel/tenants/acme/sessions/s_01-a/workspace/snapshots/0123abcd0123abcd.json");
    expect(snapshotEntryIdOfKey(workspaceSnapshotsPrefix("keel/", ref), key)).toBe("0123abcd0123abcd");
  });

  test("hashes and entry ids that could change the key are refused", () => {
    for (const bad of ["../x", "A".repeat(64), `${hash}/..`, ""]) {
      expect(() => workspaceBlobKey("keel/", ref, bad)).toThrow(/invalid content hash/);
    }
    for (const bad of ["../e1", "e1/x", "", "e 1"]) {
      expect(() => workspaceSnapshotKey("keel/", ref, bad)).toThrow(/invalid entry id/);
    }
    expect(snapshotEntryIdOfKey(workspaceSnapshotsPrefix("keel/", ref), "keel/elsewhere/e1.json")).toBeNull();
  });
});
