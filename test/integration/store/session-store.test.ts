import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { parseSession } from "../../../src/core/session-codec";
import { EntryCache } from "../../../src/store/entry-cache";
import {
  CorruptObjectError,
  EntryConflictError,
  SessionExistsError,
  SessionNotFoundError,
} from "../../../src/store/session-errors";
import { chunkKey, entryKey, InvalidIdError } from "../../../src/store/session-keys";
import { SessionStore, type SessionStoreOptions } from "../../../src/store/session-store";
import { s3Client, s3Settings } from "../../support/integration-env";
import { countOf, entryAt, headerFor, newRef, recordCommands, type SentCommand } from "./store-fixtures";

/** Tests that append hundreds of entries one by one. */
const LONG_TEST_MS = 120_000;

describe("SessionStore against a real S3 server", () => {
  const clients: S3Client[] = [];
  afterAll(() => {
    for (const client of clients) client.destroy();
  });

  /** A store on its own client (so its commands can be counted) and its own cache. */
  function openStore(options: SessionStoreOptions = {}): { store: SessionStore; sent: SentCommand[] } {
    const client = s3Client();
    clients.push(client);
    const sent = recordCommands(client);
    return { store: new SessionStore(client, s3Settings(), options), sent };
  }

  async function putRange(store: SessionStore, ref = newRef(), from = 0, to = 0) {
    for (let seq = from; seq < to; seq++) await store.putEntry(ref, seq, entryAt(seq));
    return ref;
  }

  describe("headers", () => {
    test("createSession writes the header once and later calls get the stored one", async () => {
      const { store } = openStore();
      const ref = newRef();
      const header = headerFor(ref);
      expect(await store.sessionExists(ref)).toBe(false);
      await expect(store.getHeader(ref)).rejects.toBeInstanceOf(SessionNotFoundError);

      expect(await store.createSession(ref, header)).toEqual({ created: true, header });
      const other = { ...header, cwd: "/elsewhere" };
      const again = await openStore().store.createSession(ref, other);
      expect(again).toEqual({ created: false, header });
      expect(await openStore().store.getHeader(ref)).toEqual(header);
      expect(await openStore().store.sessionExists(ref)).toBe(true);
    });

    test("a header that does not match the schema is refused before any request", async () => {
      const { store, sent } = openStore();
      const bad = { type: "session", version: 3, timestamp: "x" } as unknown as ReturnType<typeof headerFor>;
      await expect(store.createSession(newRef(), bad)).rejects.toThrow(/not a session header/);
      expect(sent).toHaveLength(0);
    });
  });

  describe("entries", () => {
    test("putEntry writes once; a retry with the same id adopts; another id is a conflict", async () => {
      const { store } = openStore();
      const ref = newRef();
      const entry = entryAt(0);
      expect(await store.putEntry(ref, 0, entry)).toEqual({ written: true, entry });

      const retry = await openStore().store.putEntry(ref, 0, { ...entry, timestamp: "2030-01-01T00:00:00Z" });
      expect(retry).toEqual({ written: false, entry });

      const zombie = openStore().store.putEntry(ref, 0, { ...entry, id: "other" });
      await expect(zombie).rejects.toBeInstanceOf(EntryConflictError);
      await expect(zombie).rejects.toMatchObject({ seq: 0, attemptedId: "other", storedId: "e0" });
      expect(await openStore().store.getEntry(ref, 0)).toEqual(entry);
      expect(await store.getEntry(ref, 1)).toBeUndefined();
    });

    test("8 concurrent writers of one seq with the same id: one writes, all return the stored entry", async () => {
      const ref = newRef();
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, writer) =>
          openStore().store.putEntry(ref, 5, {
            ...entryAt(5),
            timestamp: `2025-01-01T00:00:0${writer}.000Z`,
          }),
        ),
      );
      expect(results.filter((r) => r.written)).toHaveLength(1);
      const winner = results.find((r) => r.written)!.entry;
      for (const result of results) expect(result.entry).toEqual(winner);
      expect(await openStore().store.getEntry(ref, 5)).toEqual(winner);
    });

    test("entries read back are frozen (they are shared through the cache)", async () => {
      const { store } = openStore();
      const ref = await putRange(store, newRef(), 0, 1);
      const read = await openStore().store.getEntry(ref, 0);
      expect(Object.isFrozen(read)).toBe(true);
      expect(() => {
        (read as { id: string }).id = "x";
      }).toThrow(TypeError);
    });

    test("a stored object that is not an entry is reported as corrupt", async () => {
      const client = s3Client();
      clients.push(client);
      const ref = newRef();
      const key = entryKey(s3Settings().prefix, ref, 0);
      await client.send(
        new PutObjectCommand({ Bucket: s3Settings().bucket, Key: key, Body: '{"type":"x"}' }),
      );
      await expect(openStore().store.getEntry(ref, 0)).rejects.toBeInstanceOf(CorruptObjectError);
    });
  });

  describe("readEntries", () => {
    test("gaps: untilGap stops at the first missing seq, otherwise skips and reports them", async () => {
      const { store } = openStore();
      const ref = newRef();
      await store.createSession(ref, headerFor(ref));
      for (const seq of [0, 1, 2, 4, 5, 8]) await store.putEntry(ref, seq, entryAt(seq));

      const live = await openStore().store.readEntries(ref, { untilGap: true });
      expect(live.entries.map((e) => e.seq)).toEqual([0, 1, 2]);
      expect(live.nextSeq).toBe(3);
      expect(live.gaps).toEqual([3, 6, 7]);

      const all = await openStore().store.readEntries(ref);
      expect(all.entries.map((e) => e.seq)).toEqual([0, 1, 2, 4, 5, 8]);
      expect(all.entries.map((e) => e.entry)).toEqual([0, 1, 2, 4, 5, 8].map((seq) => entryAt(seq)));
      expect(all.nextSeq).toBe(3);
      expect(all.gaps).toEqual([3, 6, 7]);

      const bounded = await openStore().store.readEntries(ref, { toSeq: 4 });
      expect(bounded.entries.map((e) => e.seq)).toEqual([0, 1, 2, 4]);
      expect(bounded.gaps).toEqual([3]);

      // The gap filled in: a reader that saw it before now reads past it.
      await store.putEntry(ref, 3, entryAt(3));
      const after = await store.readEntries(ref, { untilGap: true });
      expect(after.entries.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(after.nextSeq).toBe(6);
    });

    test("a session with no objects is not found; an empty one reads as empty", async () => {
      const { store } = openStore();
      const ref = newRef();
      await expect(store.readEntries(ref)).rejects.toBeInstanceOf(SessionNotFoundError);
      await store.createSession(ref, headerFor(ref));
      expect(await store.readEntries(ref)).toEqual({ entries: [], nextSeq: 0, gaps: [] });
    });

    test(
      "chunks are written as entries complete them, and a cold read uses them",
      async () => {
        const chunkSize = 256;
        const { store: writer, sent: writes } = openStore({ chunkSize });
        const ref = newRef();
        await writer.createSession(ref, headerFor(ref));
        await putRange(writer, ref, 0, 600);
        const chunkPuts = writes.filter(
          (c) => c.command === "PutObjectCommand" && c.key?.includes("/chunks/"),
        );
        expect(chunkPuts.map((c) => c.key)).toEqual([
          chunkKey(s3Settings().prefix, ref, 0),
          chunkKey(s3Settings().prefix, ref, 256),
        ]);

        const { store: reader, sent } = openStore({ chunkSize });
        const read = await reader.readEntries(ref);
        expect(read.entries).toHaveLength(600);
        expect(read.entries.map((e) => e.seq)).toEqual(Array.from({ length: 600 }, (_, i) => i));
        expect(read.entries[300]!.entry).toEqual(entryAt(300));
        expect(read.nextSeq).toBe(600);
        const gets = sent.filter((c) => c.command === "GetObjectCommand");
        expect(gets.filter((c) => c.key?.includes("/chunks/"))).toHaveLength(2);
        expect(gets.filter((c) => c.key?.includes("/entries/"))).toHaveLength(600 - 512);
        expect(countOf(sent, "ListObjectsV2Command")).toBe(1);
        expect(countOf(sent, "PutObjectCommand")).toBe(0);
      },
      LONG_TEST_MS,
    );

    test("entries written out of order leave the chunk to the first reader, which seals it", async () => {
      const chunkSize = 4;
      const { store: writer, sent: writes } = openStore({ chunkSize });
      const ref = newRef();
      await writer.createSession(ref, headerFor(ref));
      for (const seq of [0, 1, 3, 2]) await writer.putEntry(ref, seq, entryAt(seq));
      expect(writes.some((c) => c.key?.includes("/chunks/"))).toBe(false);

      const { store: reader, sent } = openStore({ chunkSize });
      await reader.readEntries(ref);
      expect(sent.filter((c) => c.command === "PutObjectCommand").map((c) => c.key)).toEqual([
        chunkKey(s3Settings().prefix, ref, 0),
      ]);

      const { store: cold, sent: coldSent } = openStore({ chunkSize });
      const read = await cold.readEntries(ref);
      expect(read.entries.map((e) => e.entry)).toEqual([0, 1, 2, 3].map((seq) => entryAt(seq)));
      expect(coldSent.filter((c) => c.command === "GetObjectCommand").map((c) => c.key)).toEqual([
        chunkKey(s3Settings().prefix, ref, 0),
      ]);
    });

    test("a second read of an unchanged session makes one LIST and no GET; new entries cost one GET each", async () => {
      const { store: writer } = openStore({ chunkSize: 8 });
      const ref = newRef();
      await writer.createSession(ref, headerFor(ref));
      await putRange(writer, ref, 0, 20);

      const { store: reader, sent } = openStore({ chunkSize: 8 });
      const first = await reader.readEntries(ref);
      expect(first.entries).toHaveLength(20);
      sent.length = 0;
      reader.cache.resetCounters();

      const second = await reader.readEntries(ref);
      expect(second).toEqual(first);
      expect(sent.map((c) => c.command)).toEqual(["ListObjectsV2Command"]);
      expect(reader.cache.stats().misses).toBe(0);
      expect(reader.cache.stats().hits).toBeGreaterThan(0);

      await putRange(writer, ref, 20, 23);
      sent.length = 0;
      const third = await reader.readEntries(ref);
      expect(third.entries).toHaveLength(23);
      expect(countOf(sent, "ListObjectsV2Command")).toBe(1);
      expect(sent.filter((c) => c.command === "GetObjectCommand").map((c) => c.key)).toEqual(
        [20, 21, 22].map((seq) => entryKey(s3Settings().prefix, ref, seq)),
      );
    });

    test("entries this worker wrote are read from the cache", async () => {
      const { store, sent } = openStore({ chunkSize: 8 });
      const ref = newRef();
      await store.createSession(ref, headerFor(ref));
      await putRange(store, ref, 0, 5);
      sent.length = 0;
      const read = await store.readEntries(ref);
      expect(read.entries).toHaveLength(5);
      expect(sent.map((c) => c.command)).toEqual(["ListObjectsV2Command"]);
    });

    test("a read up to entries this store wrote in order, or read before, needs no request at all", async () => {
      const { store, sent } = openStore({ chunkSize: 8 });
      const ref = newRef();
      await store.createSession(ref, headerFor(ref));
      await putRange(store, ref, 0, 5);
      sent.length = 0;
      const read = await store.readEntries(ref, { toSeq: 4, untilGap: true });
      expect(read.entries.map((e) => e.entry)).toEqual([0, 1, 2, 3, 4].map((seq) => entryAt(seq)));
      expect(sent).toEqual([]);
      // Past what it knows, the store lists again (another writer may have added entries).
      await store.readEntries(ref, { toSeq: 6 });
      expect(countOf(sent, "ListObjectsV2Command")).toBe(1);
    });

    test("a shared cache bounded below the session size still reads everything correctly", async () => {
      const { store: writer } = openStore({ chunkSize: 4 });
      const ref = newRef();
      await writer.createSession(ref, headerFor(ref));
      await putRange(writer, ref, 0, 10);
      const cache = new EntryCache({ maxBytes: 1000 });
      const { store: reader } = openStore({ chunkSize: 4, cache });
      for (let round = 0; round < 2; round++) {
        const read = await reader.readEntries(ref);
        expect(read.entries.map((e) => e.entry)).toEqual(Array.from({ length: 10 }, (_, i) => entryAt(i)));
      }
      expect(cache.stats().bytes).toBeLessThanOrEqual(1000);
      expect(cache.stats().evictions).toBeGreaterThan(0);
    });
  });

  test(
    "bytes written per appended entry do not grow with the session",
    async () => {
      const chunkSize = 256;
      const { store, sent } = openStore({ chunkSize });
      const ref = newRef();
      await store.createSession(ref, headerFor(ref));
      // Same-size content at every seq: ids and numbers padded to a fixed width.
      const sized = (seq: number) => {
        const entry = entryAt(seq, "x".repeat(200));
        return { ...entry, id: `e${String(seq).padStart(6, "0")}`, parentId: null };
      };
      const putsPerSeq = new Map<number, SentCommand[]>();
      for (let seq = 0; seq <= 1000; seq++) {
        sent.length = 0;
        await store.putEntry(ref, seq, sized(seq));
        putsPerSeq.set(
          seq,
          sent.filter((c) => c.command === "PutObjectCommand"),
        );
      }
      const bytesAt = (seq: number) => putsPerSeq.get(seq)!.reduce((sum, c) => sum + (c.bodyBytes ?? 0), 0);
      expect(bytesAt(1000)).toBe(bytesAt(10));
      expect(putsPerSeq.get(10)).toHaveLength(1);
      // Chunk-completing appends write one entry plus one chunk of exactly chunkSize entries.
      const chunkEnds = [255, 511, 767];
      const chunkBytes = chunkEnds.map((seq) => bytesAt(seq));
      expect(new Set(chunkBytes).size).toBe(1);
      // The chunk holds the same lines plus a newline each.
      expect(chunkBytes[0]).toBe(bytesAt(10) + chunkSize * (bytesAt(10) + 1));
      for (let seq = 0; seq <= 1000; seq++) {
        if (!chunkEnds.includes(seq)) expect(bytesAt(seq)).toBe(bytesAt(10));
      }
    },
    LONG_TEST_MS,
  );

  test("invalid ids are refused before any request", async () => {
    const { store, sent } = openStore();
    const badIds = ["../x", "a/b", "", "a".repeat(200), "%2e%2e", "..", "-lead", "a b", "é"];
    for (const bad of badIds) {
      for (const ref of [
        { tenantId: bad, sessionId: "s1" },
        { tenantId: "t1", sessionId: bad },
      ]) {
        await expect(
          store.createSession(ref, headerFor({ tenantId: "t", sessionId: "s" })),
        ).rejects.toBeInstanceOf(InvalidIdError);
        await expect(store.putEntry(ref, 0, entryAt(0))).rejects.toBeInstanceOf(InvalidIdError);
        await expect(store.getEntry(ref, 0)).rejects.toBeInstanceOf(InvalidIdError);
        await expect(store.readEntries(ref)).rejects.toBeInstanceOf(InvalidIdError);
        await expect(store.getHeader(ref)).rejects.toBeInstanceOf(InvalidIdError);
        await expect(store.sessionExists(ref)).rejects.toBeInstanceOf(InvalidIdError);
        await expect(store.exportJsonl(ref)).rejects.toBeInstanceOf(InvalidIdError);
        await expect(store.importEntries(ref, headerFor(ref), [])).rejects.toBeInstanceOf(InvalidIdError);
      }
      await expect(store.listSessions(bad)).rejects.toBeInstanceOf(InvalidIdError);
    }
    await expect(store.putEntry(newRef(), -1, entryAt(0))).rejects.toThrow(/sequence/);
    await expect(store.putEntry(newRef(), 1.5, entryAt(0))).rejects.toThrow(/sequence/);
    expect(sent).toHaveLength(0);
  });

  test("listSessions pages through a tenant's sessions with their headers", async () => {
    const { store } = openStore();
    const tenantId = newRef().tenantId;
    const ids = Array.from({ length: 7 }, (_, i) => `s${i}`);
    await Promise.all(
      ids.map((sessionId) =>
        store.createSession({ tenantId, sessionId }, headerFor({ tenantId, sessionId })),
      ),
    );
    // Another tenant's session never shows up.
    const stranger = newRef();
    await store.createSession(stranger, headerFor(stranger));

    const { store: lister } = openStore();
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await lister.listSessions(tenantId, { limit: 3, cursor });
      pages++;
      for (const session of page.sessions) {
        expect(session.header?.id).toBe(session.sessionId);
        seen.push(session.sessionId);
      }
      cursor = page.nextCursor;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
    expect(await lister.listSessions(newRef().tenantId)).toEqual({ sessions: [] });
    await expect(lister.listSessions(tenantId, { limit: 0 })).rejects.toThrow(RangeError);
  });

  describe("export and import", () => {
    test("export is the header then every entry in seq order, one JSON object per line", async () => {
      const { store } = openStore({ chunkSize: 4 });
      const ref = newRef();
      const header = headerFor(ref);
      await store.createSession(ref, header);
      await putRange(store, ref, 0, 10);
      const entries = (n: number) => Array.from({ length: n }, (_, seq) => entryAt(seq));
      const text = await openStore({ chunkSize: 4 }).store.exportJsonl(ref);
      const lines = text.trimEnd().split("\n");
      expect(lines).toHaveLength(11);
      expect(JSON.parse(lines[0]!)).toEqual(header);
      expect(lines.slice(1).map((line) => JSON.parse(line))).toEqual(entries(10));
      const parsed = parseSession(text);
      expect(parsed.errors).toEqual([]);
      expect(parsed.entries).toHaveLength(10);
    });

    test("export of a missing session is SessionNotFoundError", async () => {
      await expect(openStore().store.exportJsonl(newRef())).rejects.toBeInstanceOf(SessionNotFoundError);
    });

    test("import then export round-trips, chunks included; importing over a session is refused", async () => {
      const chunkSize = 16;
      const ref = newRef();
      const header = headerFor(ref);
      const entries = Array.from({ length: 40 }, (_, seq) => entryAt(seq));
      const { store, sent } = openStore({ chunkSize });
      expect(await store.importEntries(ref, header, entries)).toEqual({ entries: 40, chunks: 2 });
      expect(sent.filter((c) => c.key?.includes("/chunks/")).map((c) => c.key)).toEqual(
        expect.arrayContaining([
          chunkKey(s3Settings().prefix, ref, 0),
          chunkKey(s3Settings().prefix, ref, 16),
        ]),
      );

      const { store: reader, sent: readSent } = openStore({ chunkSize });
      const text = await reader.exportJsonl(ref);
      expect(text).toBe(`${[header, ...entries].map((line) => JSON.stringify(line)).join("\n")}\n`);
      expect(
        readSent.filter((c) => c.command === "GetObjectCommand" && c.key?.includes("/chunks/")),
      ).toHaveLength(2);

      await expect(store.importEntries(ref, header, entries)).rejects.toBeInstanceOf(SessionExistsError);
      const { store: fresh } = openStore();
      await expect(fresh.importEntries(ref, header, [])).rejects.toBeInstanceOf(SessionExistsError);
    });
  });
});
