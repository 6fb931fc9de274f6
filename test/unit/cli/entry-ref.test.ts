/** fork, branch and label take what `keel entries` shows: an id, the index before it, or an id's start. */
import { UsageError } from "../../../src/api-client/client";
import { type EntriesPage, resolveEntryRef } from "../../../src/cli/commands/tree";

const IDS = [
  "2a20f1c3d4e5f607",
  "2a21aa00bb11cc22",
  "9f00000000000001",
  "c0ffee0000000000",
  "deadbeef00000000",
];

/** A session of five entries, seq 1 to 5, served two to a page at most. */
async function readPage(after: number | undefined, limit: number): Promise<EntriesPage> {
  const following = IDS.map((id, index) => ({ seq: index + 1, entry: { id } })).filter(
    ({ seq }) => after === undefined || seq > after,
  );
  const page = following.slice(0, Math.min(limit, 2));
  return { entries: page, ...(following.length > page.length ? { nextAfter: page.at(-1)?.seq } : {}) };
}

const resolve = (ref: string) => resolveEntryRef("s-1", ref, readPage);

test("the index `keel entries` prints is the entry at that seq", async () => {
  expect(await resolve("4")).toBe("c0ffee0000000000");
  expect(await resolve("1")).toBe("2a20f1c3d4e5f607");
  await expect(resolve("9")).rejects.toThrow(UsageError);
  await expect(resolve("0")).rejects.toThrow(/has no entry 0; `keel entries s-1` lists them/);
});

test("a whole id is taken as it is; the unambiguous start of one is completed", async () => {
  expect(await resolve("deadbeef00000000")).toBe("deadbeef00000000");
  expect(await resolve("dead")).toBe("deadbeef00000000");
  expect(await resolve("2A20")).toBe("2a20f1c3d4e5f607");
  await expect(resolve("2a2")).rejects.toThrow(/starts 2 entry ids/);
});

test("what names no entry goes to the API as it is (which answers No such entry)", async () => {
  expect(await resolve("no-such-entry")).toBe("no-such-entry");
  expect(await resolve("abcabc")).toBe("abcabc");
});
