import { makeEntryId, makeUniqueEntryId, seededRandom } from "../../../src/core/ids";

describe("entry ids", () => {
  it("are 16 hex digits, deterministic for a seeded source", () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const ids = Array.from({ length: 5 }, () => makeEntryId(a));
    expect(ids).toEqual(Array.from({ length: 5 }, () => makeEntryId(b)));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(new Set(ids).size).toBe(5);
  });

  it("use all 64 bits: both halves come from separate draws", () => {
    const draws = [0.5, 0.25];
    expect(makeEntryId(() => draws.shift()!)).toBe("8000000040000000");
    expect(makeEntryId(() => 0.999999999999)).toBe("ffffffffffffffff");
  });

  it("reject an out-of-range source and avoid taken ids", () => {
    expect(() => makeEntryId(() => 1)).toThrow(RangeError);
    expect(() => makeEntryId(() => Number.NaN)).toThrow(RangeError);
    const taken = new Set([makeEntryId(seededRandom(7))]);
    const next = makeUniqueEntryId(seededRandom(7), taken);
    expect(taken.has(next)).toBe(false);
    expect(() => makeUniqueEntryId(() => 0, new Set(["0000000000000000"]))).toThrow(/colliding/);
  });

  it("do not collide over many draws", () => {
    const random = seededRandom(1);
    const ids = new Set(Array.from({ length: 50_000 }, () => makeEntryId(random)));
    expect(ids.size).toBe(50_000);
  });
});
