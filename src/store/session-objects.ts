/**
 * How the session store turns stored bytes into values and values into bytes: JSON parsed and
 * checked against the entry/header schemas (a mismatch is a `CorruptObjectError` on read, an
 * `InvalidSessionDataError` before a write), chunk objects of exactly `chunkSize` lines, and
 * frozen values for the shared cache.
 */
import type { z } from "zod";
import { serializeEntry } from "../core/session-codec";
import {
  type SessionEntry,
  SessionEntrySchema,
  type SessionHeader,
  SessionHeaderSchema,
} from "../core/session-types";
import { CorruptObjectError, InvalidSessionDataError } from "./session-errors";

/** Parses the text of the object at `key`; throws `CorruptObjectError` when it is not one. */
export type Parse<T> = (key: string, text: string) => T;

function parseJson(key: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CorruptObjectError(key, `not JSON (${(error as Error).message})`);
  }
}

export interface ObjectKind {
  what: string;
  schema: z.ZodType;
}

export const ENTRY_KIND: ObjectKind = { what: "session entry", schema: SessionEntrySchema };
export const HEADER_KIND: ObjectKind = { what: "session header", schema: SessionHeaderSchema };

/** Why `value` is not a valid object of `kind`, or undefined when it is. */
function schemaProblem(kind: ObjectKind, value: unknown): string | undefined {
  const checked = kind.schema.safeParse(value);
  if (checked.success) return undefined;
  const issue = checked.error.issues[0];
  const path = issue && issue.path.length > 0 ? issue.path.join(".") : "(root)";
  return `not a ${kind.what}: ${path}: ${issue?.message ?? "invalid"}`;
}

function schemaParser<T>(kind: ObjectKind): Parse<T> {
  return (key, text) => {
    const value = parseJson(key, text);
    const problem = schemaProblem(kind, value);
    if (problem) throw new CorruptObjectError(key, problem);
    // The object as read, not zod's copy: unknown keys and key order survive (as in the codec).
    return value as T;
  };
}

export const parseEntry = schemaParser<SessionEntry>(ENTRY_KIND);
export const parseHeader = schemaParser<SessionHeader>(HEADER_KIND);

/** The bytes to write and the value a reader will parse from them. */
export interface PreparedWrite {
  body: string;
  value: unknown;
}

/** Serializes and validates an entry or header; throws `InvalidSessionDataError` when invalid. */
export function prepareWrite(
  key: string,
  value: SessionEntry | SessionHeader,
  kind: ObjectKind,
): PreparedWrite {
  const body = serializeEntry(value);
  const parsed: unknown = JSON.parse(body);
  const problem = schemaProblem(kind, parsed);
  if (problem) throw new InvalidSessionDataError(key, problem);
  return { body, value: parsed };
}

export function parseChunk(key: string, text: string, chunkSize: number): SessionEntry[] {
  const lines = text.split("\n").filter((line) => line !== "");
  if (lines.length !== chunkSize) {
    throw new CorruptObjectError(key, `holds ${lines.length} entries, the chunk size is ${chunkSize}`);
  }
  return lines.map((line) => parseEntry(key, line));
}

/**
 * Cached objects are shared by every reader of the worker; freezing them turns an accidental
 * mutation into an immediate error instead of a silently corrupted cache.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
