/**
 * Locating an edit's `oldText` in a file: exactly first, then tolerantly. Pure functions.
 *
 * The tolerant match compares both texts after folding differences models commonly introduce:
 * Unicode compatibility forms (NFKC), trailing whitespace on a line, smart quotes, Unicode
 * dashes and special spaces. Unlike a whole-file normalization, only the matched region of the
 * original text is replaced: every folded character remembers which original characters it
 * came from.
 */

export type MatchResult =
  | { kind: "unique"; start: number; end: number; tolerant: boolean }
  | { kind: "ambiguous"; count: number; lines: number[]; tolerant: boolean }
  | { kind: "none" };

interface Folded {
  text: string;
  /** For each UTF-16 unit of `text`, the original range [start, end) it came from. */
  starts: number[];
  ends: number[];
}

function foldCharacter(character: string): string {
  return character
    .normalize("NFKC")
    .replace(/[\u2018\u2019\u201A\u201B]/g, "'")
    .replace(/[\u201C\u201D\u201E\u201F]/g, '"')
    .replace(/[\u2010-\u2015\u2212]/g, "-")
    .replace(/[\u00A0\u2002-\u200A\u202F\u205F\u3000]/g, " ");
}

/** Folds `original`, dropping whitespace at the end of every line (and of the text). */
function fold(original: string): Folded {
  const folded: Folded = { text: "", starts: [], ends: [] };
  let pendingSpace: { unit: string; start: number; end: number }[] = [];
  const push = (unit: string, start: number, end: number) => {
    folded.text += unit;
    folded.starts.push(start);
    folded.ends.push(end);
  };
  // A base character with its combining marks is normalized as one unit.
  for (const match of original.matchAll(/\P{M}\p{M}*|\p{M}+/gu)) {
    const start = match.index;
    const end = start + match[0].length;
    for (const unit of foldCharacter(match[0]).split("")) {
      if (unit === " " || unit === "\t") {
        pendingSpace.push({ unit, start, end });
        continue;
      }
      if (unit !== "\n") for (const space of pendingSpace) push(space.unit, space.start, space.end);
      pendingSpace = [];
      push(unit, start, end);
    }
  }
  return folded;
}

function occurrences(haystack: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) found.push(at);
  return found;
}

const lineOf = (text: string, index: number): number => text.slice(0, index).split("\n").length;

/** MAX lines reported for an ambiguous match. */
const MAX_REPORTED_LINES = 10;

/** Finds `needle` in `content` (both LF-normalized): exactly, else tolerantly. */
export function locate(content: string, needle: string): MatchResult {
  if (needle.length === 0) return { kind: "none" };
  const exact = occurrences(content, needle);
  if (exact.length === 1) {
    const start = exact[0] ?? 0;
    return { kind: "unique", start, end: start + needle.length, tolerant: false };
  }
  if (exact.length > 1) {
    return {
      kind: "ambiguous",
      count: exact.length,
      lines: exact.slice(0, MAX_REPORTED_LINES).map((at) => lineOf(content, at)),
      tolerant: false,
    };
  }
  const foldedContent = fold(content);
  const foldedNeedle = fold(needle).text;
  if (foldedNeedle.length === 0) return { kind: "none" };
  const tolerant = occurrences(foldedContent.text, foldedNeedle);
  if (tolerant.length === 0) return { kind: "none" };
  const originalStarts = tolerant.map((at) => foldedContent.starts[at] ?? 0);
  if (tolerant.length > 1) {
    return {
      kind: "ambiguous",
      count: tolerant.length,
      lines: originalStarts.slice(0, MAX_REPORTED_LINES).map((at) => lineOf(content, at)),
      tolerant: true,
    };
  }
  const at = tolerant[0] ?? 0;
  const end = foldedContent.ends[at + foldedNeedle.length - 1] ?? content.length;
  return { kind: "unique", start: originalStarts[0] ?? 0, end, tolerant: true };
}

/** Number of (possibly overlapping) exact occurrences. */
export function countOccurrences(haystack: string, needle: string): number {
  return needle.length === 0 ? 0 : occurrences(haystack, needle).length;
}
