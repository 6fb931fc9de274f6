/**
 * Entry ids from caller-supplied randomness, so workflow code (which must be deterministic)
 * can pass its seeded generator and a retried activity writes the same ids.
 */

/** Hex digits in an entry id: 16 hex digits = 64 bits. */
export const ENTRY_ID_HEX_DIGITS = 16;
/** Bits taken from one `random()` draw; well under the 52-bit mantissa of a double. */
const BITS_PER_DRAW = 32;
const DRAW_RANGE = 2 ** BITS_PER_DRAW;

/** A source of uniform numbers in [0, 1), e.g. `Math.random` or a workflow's seeded random. */
export type RandomSource = () => number;

/**
 * A 16-hex-digit id (64 bits of entropy) drawn from `random`. Deterministic for a
 * deterministic source. Throws a RangeError if `random` returns a value outside [0, 1).
 */
export function makeEntryId(random: RandomSource): string {
  let id = "";
  while (id.length < ENTRY_ID_HEX_DIGITS) {
    const draw = random();
    if (!(draw >= 0 && draw < 1)) throw new RangeError(`random source returned ${draw}, expected [0, 1)`);
    id += Math.floor(draw * DRAW_RANGE)
      .toString(16)
      .padStart(BITS_PER_DRAW / 4, "0");
  }
  return id;
}

/**
 * A new id that is not in `taken`. Collisions at 64 bits are practically impossible; the
 * check guards against a broken random source, which would otherwise corrupt the tree.
 */
export function makeUniqueEntryId(random: RandomSource, taken: ReadonlySet<string>): string {
  const MAX_ATTEMPTS = 16;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const id = makeEntryId(random);
    if (!taken.has(id)) return id;
  }
  throw new Error(`random source produced ${MAX_ATTEMPTS} colliding entry ids`);
}

/**
 * A small seeded generator (mulberry32) for tests and tools that need reproducible ids
 * without a workflow; not cryptographic.
 */
export function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / DRAW_RANGE;
  };
}

/** Tenant and session ids: a letter or digit, then up to 127 letters, digits, `_` or `-`. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

export function isValidId(value: unknown): value is string {
  return typeof value === "string" && ID_PATTERN.test(value);
}
