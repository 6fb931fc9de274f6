/**
 * Output limits shared by all tools, and the notices that tell the model how to continue.
 *
 * Two independent limits, whichever is hit first: lines and UTF-8 bytes. Head truncation keeps
 * the beginning (read, grep, find, ls); tail truncation keeps the end (bash, where errors and
 * results come last). Only whole lines are kept, except when a single last line alone exceeds
 * the byte limit in tail mode.
 */

export const MAX_OUTPUT_LINES = 2000;
export const MAX_OUTPUT_BYTES = 50 * 1024;
/** Characters kept of one grep match or context line. */
export const MAX_GREP_LINE_CHARS = 500;
export const DEFAULT_GREP_LIMIT = 100;
export const DEFAULT_FIND_LIMIT = 1000;
export const DEFAULT_LS_LIMIT = 500;
/** What `ls` answers for a directory with nothing in it (scripted models read it as such). */
export const EMPTY_DIRECTORY_LISTING = "(empty directory)";

export interface Truncation {
  /** The kept text. */
  content: string;
  truncated: boolean;
  truncatedBy: "lines" | "bytes" | null;
  totalLines: number;
  totalBytes: number;
  outputLines: number;
  outputBytes: number;
  /** Tail mode only: the kept text starts inside a line longer than the byte limit. */
  lastLinePartial: boolean;
  /** Head mode only: the first line alone is longer than the byte limit; nothing was kept. */
  firstLineExceedsLimit: boolean;
}

export interface TruncationLimits {
  maxLines?: number;
  maxBytes?: number;
}

const byteLength = (text: string): number => Buffer.byteLength(text, "utf8");

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes}B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)}KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)}MB`;
}

function untruncated(content: string, lineCount: number, bytes: number): Truncation {
  return {
    content,
    truncated: false,
    truncatedBy: null,
    totalLines: lineCount,
    totalBytes: bytes,
    outputLines: lineCount,
    outputBytes: bytes,
    lastLinePartial: false,
    firstLineExceedsLimit: false,
  };
}

/**
 * Whole lines taken from the start (or, with `fromEnd`, the end) of `lines` while both limits
 * hold, in their original order; `hitBytes` says the byte limit, not the line limit, stopped it.
 */
function takeWholeLines(
  lines: readonly string[],
  maxLines: number,
  maxBytes: number,
  fromEnd: boolean,
): { kept: string[]; keptBytes: number; hitBytes: boolean } {
  const kept: string[] = [];
  let keptBytes = 0;
  for (let taken = 0; taken < lines.length && kept.length < maxLines; taken++) {
    const line = lines[fromEnd ? lines.length - 1 - taken : taken] ?? "";
    const cost = byteLength(line) + (kept.length > 0 ? 1 : 0);
    if (keptBytes + cost > maxBytes) return { kept: ordered(kept, fromEnd), keptBytes, hitBytes: true };
    kept.push(line);
    keptBytes += cost;
  }
  return { kept: ordered(kept, fromEnd), keptBytes, hitBytes: false };
}

function ordered(lines: string[], reversed: boolean): string[] {
  return reversed ? lines.reverse() : lines;
}

/** Keeps the first whole lines of `content` that fit both limits. */
export function truncateHead(content: string, limits: TruncationLimits = {}): Truncation {
  const { maxLines, maxBytes, lines, totalBytes } = measure(content, limits);
  if (lines.length <= maxLines && totalBytes <= maxBytes)
    return untruncated(content, lines.length, totalBytes);

  const { kept, keptBytes, hitBytes } = takeWholeLines(lines, maxLines, maxBytes, false);
  return cut(kept, keptBytes, hitBytes, lines.length, totalBytes, {
    lastLinePartial: false,
    firstLineExceedsLimit: kept.length === 0,
  });
}

/** The limits (defaults filled in) and the measure of `content`. */
function measure(content: string, limits: TruncationLimits) {
  const lines = content.split("\n");
  return {
    maxLines: limits.maxLines ?? MAX_OUTPUT_LINES,
    maxBytes: limits.maxBytes ?? MAX_OUTPUT_BYTES,
    lines,
    totalBytes: byteLength(content),
  };
}

/** The truncation that kept `kept` of `totalLines` lines. */
function cut(
  kept: string[],
  keptBytes: number,
  hitBytes: boolean,
  totalLines: number,
  totalBytes: number,
  partial: Pick<Truncation, "lastLinePartial" | "firstLineExceedsLimit">,
): Truncation {
  return {
    content: kept.join("\n"),
    truncated: true,
    truncatedBy: hitBytes ? "bytes" : "lines",
    totalLines,
    totalBytes,
    outputLines: kept.length,
    outputBytes: keptBytes,
    ...partial,
  };
}

/** Keeps the last whole lines of `content` that fit both limits (or the end of an over-long last line). */
export function truncateTail(content: string, limits: TruncationLimits = {}): Truncation {
  const { maxLines, maxBytes, lines, totalBytes } = measure(content, limits);
  if (lines.length <= maxLines && totalBytes <= maxBytes)
    return untruncated(content, lines.length, totalBytes);

  let { kept, keptBytes, hitBytes } = takeWholeLines(lines, maxLines, maxBytes, true);
  const lastLinePartial = kept.length === 0;
  if (lastLinePartial) {
    // Even the last line alone is over the byte limit: keep its end.
    const end = tailBytes(lines[lines.length - 1] ?? "", maxBytes);
    kept = [end];
    keptBytes = byteLength(end);
    hitBytes = true;
  }
  return cut(kept, keptBytes, hitBytes, lines.length, totalBytes, {
    lastLinePartial,
    firstLineExceedsLimit: false,
  });
}

/** The last `maxBytes` bytes of `text`, starting on a UTF-8 character boundary. */
function tailBytes(text: string, maxBytes: number): string {
  const buffer = Buffer.from(text, "utf8");
  let start = Math.max(0, buffer.length - maxBytes);
  while (start < buffer.length && (buffer[start]! & 0xc0) === 0x80) start++;
  return buffer.subarray(start).toString("utf8");
}

/** Caps one line at `maxChars` characters, marking the cut. */
export function truncateLine(
  line: string,
  maxChars = MAX_GREP_LINE_CHARS,
): { text: string; truncated: boolean } {
  if (line.length <= maxChars) return { text: line, truncated: false };
  return { text: `${line.slice(0, maxChars)}... [truncated]`, truncated: true };
}

// ---- Notices: the text appended to a truncated output, telling the model what to do next.

/** Where a truncated bash output's full text is, or that it could not be kept (no file). */
function whereFullOutput(fullOutput: string | undefined, howToRead: boolean): string {
  if (fullOutput === undefined) return "The full output could not be kept.";
  return howToRead
    ? `Full output: ${fullOutput} (use read with offset, or grep, to see the rest)`
    : `Full output: ${fullOutput}`;
}

export const notices = {
  readLines: (first: number, last: number, total: number | string) =>
    `[Showing lines ${first}-${last} of ${total}. Use offset=${last + 1} to continue.]`,
  readBytes: (first: number, last: number, total: number | string) =>
    `[Showing lines ${first}-${last} of ${total} (${formatSize(MAX_OUTPUT_BYTES)} limit). Use offset=${last + 1} to continue.]`,
  readRemaining: (remaining: number, nextOffset: number) =>
    `[${remaining} more lines in file. Use offset=${nextOffset} to continue.]`,
  readLongLine: (line: number, size: number, path: string) =>
    `[Line ${line} is ${formatSize(size)}, exceeds the ${formatSize(MAX_OUTPUT_BYTES)} limit. Use bash: sed -n '${line}p' ${path} | head -c ${MAX_OUTPUT_BYTES}]`,
  bashLines: (first: number, last: number, total: number, fullOutput: string | undefined) =>
    `[Showing lines ${first}-${last} of ${total}. ${whereFullOutput(fullOutput, true)}]`,
  bashBytes: (first: number, last: number, total: number, fullOutput: string | undefined) =>
    `[Showing lines ${first}-${last} of ${total} (${formatSize(MAX_OUTPUT_BYTES)} limit). ${whereFullOutput(fullOutput, true)}]`,
  bashPartialLine: (shownBytes: number, line: number, fullOutput: string | undefined) =>
    `[Showing the last ${formatSize(shownBytes)} of line ${line}. ${whereFullOutput(fullOutput, false)}]`,
  taskAnswer: (shown: number, total: number, sessionId: string) =>
    `[Showing lines 1-${shown} of ${total} of the agent's answer (${formatSize(MAX_OUTPUT_BYTES)} limit). Full answer: the last message of session ${sessionId}]`,
  matchLimit: (limit: number) =>
    `${limit} matches limit reached. Use limit=${limit * 2} for more, or refine pattern`,
  resultLimit: (limit: number) =>
    `${limit} results limit reached. Use limit=${limit * 2} for more, or refine pattern`,
  entryLimit: (limit: number) => `${limit} entries limit reached. Use limit=${limit * 2} for more`,
  byteLimit: () => `${formatSize(MAX_OUTPUT_BYTES)} limit reached`,
  longLines: () => `Some lines truncated to ${MAX_GREP_LINE_CHARS} chars. Use read to see full lines`,
} as const;

/** Appends `[notice. notice]` to a listing when any notice applies. */
function withNotices(text: string, list: string[]): string {
  return list.length === 0 ? text : `${text}\n\n[${list.join(". ")}]`;
}

/** A limit a listing reached: the notice the model reads and the detail recorded for clients. */
export interface LimitReached {
  notice: string;
  detail: string;
  value: unknown;
}

/**
 * A listing tool's text and details: `lines` capped at the output byte limit, then the notices of
 * the limits reached — `countLimit` (when given), the byte limit, then `others` — each also
 * recorded in `details` under its name.
 */
export function listing(
  lines: string[],
  details: Record<string, unknown>,
  countLimit: LimitReached | undefined,
  others: LimitReached[] = [],
): { text: string; details: Record<string, unknown> } {
  const truncation = truncateHead(lines.join("\n"), { maxLines: Number.MAX_SAFE_INTEGER });
  const byteLimit = truncation.truncated
    ? { notice: notices.byteLimit(), detail: "truncation", value: truncation }
    : undefined;
  const reached = [countLimit, byteLimit, ...others].filter((limit) => limit !== undefined);
  for (const limit of reached) details[limit.detail] = limit.value;
  return {
    text: withNotices(
      truncation.content,
      reached.map((limit) => limit.notice),
    ),
    details,
  };
}
