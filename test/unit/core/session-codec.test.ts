import { migratedEntryId, parseSession, serializeSession } from "../../../src/core/session-codec";
import type { SessionFile } from "../../../src/core/session-types";
import { PI_FIXTURES, readFixture, SESSION_FIXTURES } from "./helpers";

describe("parseSession", () => {
  it("reports every bad line with its number and reason, keeps the rest, never throws", () => {
    const parsed = parseSession(readFixture(SESSION_FIXTURES, "corrupt-lines.jsonl"));
    expect(parsed.errors.map((e) => e.line)).toEqual([3, 4, 6, 7, 9]);
    expect(parsed.errors[0]!.reason).toMatch(/^not JSON/);
    expect(parsed.errors[1]!.reason).toMatch(/^not a JSON object/);
    expect(parsed.errors[2]!.reason).toMatch(/invalid "message" entry: id/);
    expect(parsed.errors[3]!.reason).toMatch(/invalid "teleport" entry/);
    expect(parsed.errors[4]!.reason).toMatch(/duplicate entry id "f0000003"/);
    expect(parsed.entries.map((e) => e.id)).toEqual(["f0000001", "f0000003", "f0000004"]);
    expect(parsed.header?.id).toBe("0b1d2c3e-0000-4000-8000-000000000006");
  });

  it("reports a missing header and still returns the entries", () => {
    const text = '{"type":"label","id":"x1","parentId":null,"timestamp":"t","targetId":"x1","label":"l"}\n';
    const parsed = parseSession(text);
    expect(parsed.header).toBeNull();
    expect(parsed.errors).toEqual([{ line: 1, reason: "missing session header" }]);
    expect(parsed.entries).toHaveLength(1);
  });

  it.each(["", "\n\n", "garbage", "[1,2]", "{", "null"])("does not throw on %j", (text) => {
    const parsed = parseSession(text);
    expect(parsed.header).toBeNull();
    expect(parsed.entries).toEqual([]);
    expect(parsed.errors.length).toBeGreaterThan(0);
  });

  it("migrates a v1 file: deterministic linear ids, compaction index to id, header to v3", () => {
    const text = readFixture(SESSION_FIXTURES, "v1-linear.jsonl");
    const parsed = parseSession(text);
    expect(parsed.errors).toEqual([]);
    expect(parsed.sourceVersion).toBe(1);
    expect(parsed.header?.version).toBe(3);
    expect(parsed.entries.map((e) => e.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9].map(migratedEntryId));
    expect(parsed.entries.map((e) => e.parentId)).toEqual([
      null,
      ...[1, 2, 3, 4, 5, 6, 7, 8].map(migratedEntryId),
    ]);
    const compaction = parsed.entries.find((e) => e.type === "compaction");
    expect(compaction).toMatchObject({ firstKeptEntryId: migratedEntryId(5) });
    expect(compaction).not.toHaveProperty("firstKeptEntryIndex");
    // Same file, same ids.
    expect(parseSession(text).entries).toEqual(parsed.entries);
  });

  it("migrates a v2 file: hookMessage becomes custom", () => {
    const parsed = parseSession(readFixture(SESSION_FIXTURES, "v2-hook-message.jsonl"));
    expect(parsed.errors).toEqual([]);
    expect(parsed.sourceVersion).toBe(2);
    const second = parsed.entries[1]!;
    expect(second.type === "message" && second.message.role).toBe("custom");
  });

  it("fills totalTokens missing in old assistant usage with the sum of its parts", () => {
    const parsed = parseSession(readFixture(PI_FIXTURES, "large-session.jsonl"));
    expect(parsed.errors).toEqual([]);
    for (const entry of parsed.entries) {
      if (entry.type !== "message" || entry.message.role !== "assistant") continue;
      const u = entry.message.usage;
      expect(u.totalTokens).toBe(u.input + u.output + u.cacheRead + u.cacheWrite);
    }
  });

  it("loads both real pi files without a single bad line", () => {
    for (const name of ["before-compaction.jsonl", "large-session.jsonl"]) {
      const text = readFixture(PI_FIXTURES, name);
      const parsed = parseSession(text);
      expect(parsed.errors).toEqual([]);
      expect(parsed.entries).toHaveLength(text.trim().split("\n").length - 1);
    }
  });
});

describe("serializeSession", () => {
  it.each(["branches-labels.jsonl", "two-compactions.jsonl", "split-turn.jsonl"])(
    "reproduces the v3 file %s byte for byte",
    (name) => {
      const text = readFixture(SESSION_FIXTURES, name);
      const parsed = parseSession(text);
      expect(parsed.errors).toEqual([]);
      expect(serializeSession({ header: parsed.header!, entries: parsed.entries })).toBe(text);
    },
  );

  it("is stable after migration: serialize(parse(serialize(migrated))) is identical", () => {
    for (const name of ["v1-linear.jsonl", "v2-hook-message.jsonl"]) {
      const parsed = parseSession(readFixture(SESSION_FIXTURES, name));
      const once = serializeSession({ header: parsed.header!, entries: parsed.entries });
      const again = parseSession(once);
      expect(again.errors).toEqual([]);
      expect(again.sourceVersion).toBe(3);
      expect(serializeSession({ header: again.header!, entries: again.entries })).toBe(once);
    }
  });

  it("keeps unknown keys and their order", () => {
    const text =
      '{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/","extra":{"b":1,"a":2}}\n' +
      '{"zz":1,"type":"session_info","id":"e1","parentId":null,"timestamp":"t","name":"n","aa":[1]}\n';
    const parsed = parseSession(text);
    const file: SessionFile = { header: parsed.header!, entries: parsed.entries };
    expect(serializeSession(file)).toBe(text);
  });
});

describe("files with a broken header", () => {
  it("keeps the ids of v3 entries instead of migrating them as v1", () => {
    const text = readFixture(SESSION_FIXTURES, "split-turn.jsonl").replace(/^[^\n]*\n/, "{not json\n");
    const parsed = parseSession(text);
    expect(parsed.header).toBeNull();
    expect(parsed.sourceVersion).toBe(3);
    expect(parsed.entries[0]!.id).toBe("d0000001");
  });
});
