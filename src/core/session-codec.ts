/**
 * JSONL codec for session files: parse (with migration from versions 1 and 2) and serialize.
 *
 * Parsed entries are the very objects `JSON.parse` produced (validated, never rebuilt), so
 * serializing a version 3 file written as one `JSON.stringify` per line reproduces it byte for
 * byte, unknown keys and key order included.
 */
import type { z } from "zod";
import {
  CURRENT_SESSION_VERSION,
  type SessionEntry,
  SessionEntrySchema,
  type SessionFile,
  type SessionHeader,
  SessionHeaderSchema,
} from "./session-types";

/** Why one line of a session file was skipped. */
interface LineError {
  /** 1-based line number in the input text. */
  line: number;
  reason: string;
}

export interface ParsedSession {
  /** Null when the first non-empty line is not a valid header. */
  header: SessionHeader | null;
  /** Valid entries in file order, migrated to the current version. */
  entries: SessionEntry[];
  /** One record per skipped line. */
  errors: LineError[];
  /** Version the file was written in (1 when the header has none). */
  sourceVersion: number;
}

type RawObject = Record<string, unknown>;

interface RawLine {
  line: number;
  value: RawObject;
}

/** Longest slice of a bad line quoted back in an error reason. */
const MAX_QUOTED_LINE_CHARS = 80;

/**
 * Parse a session file. Never throws: a line that is not JSON, not an object, not a known entry
 * shape, or repeats an id is skipped and reported with its line number and the reason.
 * Version 1 and 2 files are migrated to version 3 (see `migrateRawEntries`).
 */
export function parseSession(text: string): ParsedSession {
  const errors: LineError[] = [];
  const raw = readJsonLines(text, errors);

  let header: SessionHeader | null = null;
  const first = raw[0];
  if (first && first.value.type === "session") {
    const checked = SessionHeaderSchema.safeParse(first.value);
    if (checked.success) {
      header = first.value as SessionHeader;
    } else {
      errors.push({ line: first.line, reason: `invalid session header: ${describeIssue(checked.error)}` });
    }
    raw.shift();
  } else {
    errors.push({ line: first?.line ?? 1, reason: "missing session header" });
  }

  const values = raw.map((r) => r.value);
  // Without a readable header the entries tell: v1 entries have no ids. Guessing v1 for a v3
  // file would overwrite its ids.
  const sourceVersion =
    header?.version ??
    (header === null && values.some((v) => typeof v.id === "string") ? CURRENT_SESSION_VERSION : 1);
  migrateRawEntries(sourceVersion, header as RawObject | null, values);
  fillLegacyTotalTokens(values);

  const entries: SessionEntry[] = [];
  const seenIds = new Set<string>();
  for (const { line, value } of raw) {
    const checked = SessionEntrySchema.safeParse(value);
    if (!checked.success) {
      errors.push({ line, reason: `invalid ${describeType(value)} entry: ${describeIssue(checked.error)}` });
      continue;
    }
    const entry = value as SessionEntry;
    if (seenIds.has(entry.id)) {
      errors.push({ line, reason: `duplicate entry id ${JSON.stringify(entry.id)}` });
      continue;
    }
    seenIds.add(entry.id);
    entries.push(entry);
  }
  errors.sort((a, b) => a.line - b.line);
  return { header, entries, errors, sourceVersion };
}

/** One entry (or the header) as one line of JSON, without the newline. */
export function serializeEntry(entry: SessionEntry | SessionHeader): string {
  return JSON.stringify(entry);
}

/** A whole session file: header line, then one line per entry, each ending in a newline. */
export function serializeSession(file: SessionFile): string {
  let out = `${serializeEntry(file.header)}\n`;
  for (const entry of file.entries) out += `${serializeEntry(entry)}\n`;
  return out;
}

/**
 * Bring raw entries of a `version` 1 or 2 file to version 3, in place, as pi does:
 * - v1 → v2: entries get ids and a linear parent chain; a compaction's `firstKeptEntryIndex`
 *   (an index into header + entries) becomes `firstKeptEntryId`. Unlike pi, ids are derived
 *   from the entry's position (8 hex digits), so migrating the same file twice gives the same ids.
 * - v2 → v3: the message role `hookMessage` is renamed `custom`.
 * The header's `version` is set to 3. Does nothing for version 3 files.
 */
function migrateRawEntries(version: number, header: RawObject | null, entries: RawObject[]): void {
  if (version >= CURRENT_SESSION_VERSION) return;
  if (version < 2) assignLinearIds(entries);
  for (const entry of entries) {
    const message = entry.message as RawObject | undefined;
    if (entry.type === "message" && message && message.role === "hookMessage") message.role = "custom";
  }
  if (header) header.version = CURRENT_SESSION_VERSION;
}

/** Id pi-compatible in shape (8 hex digits) for the entry at `index` of a migrated v1 file. */
export function migratedEntryId(index: number): string {
  return index.toString(16).padStart(8, "0");
}

/**
 * Older pi versions wrote assistant usage without `totalTokens`; the canonical usage requires it.
 * Fill it in place as the sum of its parts (what pi itself falls back to when computing context
 * size), so such files load instead of losing every assistant message.
 */
function fillLegacyTotalTokens(entries: RawObject[]): void {
  for (const entry of entries) {
    if (entry.type !== "message") continue;
    const message = entry.message as RawObject | undefined;
    const usage = message?.role === "assistant" ? (message.usage as RawObject | undefined) : undefined;
    if (!usage || typeof usage !== "object" || usage.totalTokens !== undefined) continue;
    const parts = [usage.input, usage.output, usage.cacheRead, usage.cacheWrite];
    if (parts.every((n) => typeof n === "number")) {
      usage.totalTokens = (parts as number[]).reduce((sum, n) => sum + n, 0);
    }
  }
}

function assignLinearIds(entries: RawObject[]): void {
  let previousId: string | null = null;
  // Index 0 is the header: v1 compaction indices count it.
  entries.forEach((entry, i) => {
    entry.id = migratedEntryId(i + 1);
    entry.parentId = previousId;
    previousId = entry.id as string;
  });
  for (const entry of entries) {
    if (entry.type !== "compaction" || typeof entry.firstKeptEntryIndex !== "number") continue;
    const target = entries[entry.firstKeptEntryIndex - 1];
    if (target) entry.firstKeptEntryId = target.id;
    delete entry.firstKeptEntryIndex;
  }
}

function readJsonLines(text: string, errors: LineError[]): RawLine[] {
  const out: RawLine[] = [];
  let start = 0;
  let lineNumber = 0;
  while (start <= text.length) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    lineNumber++;
    const line = text.slice(start, end);
    start = end + 1;
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      errors.push({ line: lineNumber, reason: `not JSON (${(error as Error).message}): ${quote(line)}` });
      continue;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      errors.push({ line: lineNumber, reason: `not a JSON object: ${quote(line)}` });
      continue;
    }
    out.push({ line: lineNumber, value: value as RawObject });
  }
  return out;
}

function describeType(value: RawObject): string {
  return typeof value.type === "string" ? JSON.stringify(value.type) : "untyped";
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "unknown validation error";
  const path = issue.path.length > 0 ? issue.path.join(".") : "(root)";
  return `${path}: ${issue.message}`;
}

function quote(line: string): string {
  return line.length > MAX_QUOTED_LINE_CHARS ? `${line.slice(0, MAX_QUOTED_LINE_CHARS)}…` : line;
}
