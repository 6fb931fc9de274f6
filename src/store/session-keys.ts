/**
 * S3 key layout of the session store. Pure: builds and parses keys, validates ids and sequence
 * numbers. Every key the store touches is built here, so nothing outside validated ids and
 * zero-padded numbers can reach a key.
 *
 * ```
 * {prefix}tenants/{tenantId}/sessions/{sessionId}/header.json
 * {prefix}tenants/{tenantId}/sessions/{sessionId}/entries/{seq:12}.json
 * {prefix}tenants/{tenantId}/sessions/{sessionId}/chunks/{firstSeq:12}.jsonl
 * ```
 * The prefix is used verbatim (give it a trailing "/" to make it a folder).
 */

/** Digits of a sequence number in a key; zero-padding keeps S3's lexical order numeric. */
const SEQ_DIGITS = 12;

/** Largest sequence number that fits in `SEQ_DIGITS` digits. */
export const MAX_SEQ = 10 ** SEQ_DIGITS - 1;

import { ID_PATTERN, isValidId } from "../core/ids";
import type { SessionRef } from "../core/session-ref";

export type { SessionRef };

/** An id that could not be used in a key; thrown before any request is made. */
export class InvalidIdError extends Error {
  override readonly name = "InvalidIdError";
  constructor(
    readonly kind: "tenant" | "session",
    readonly value: unknown,
  ) {
    super(`invalid ${kind} id ${JSON.stringify(String(value)).slice(0, 60)}: must match ${ID_PATTERN}`);
  }
}

/** A sequence number that is not an integer in [0, MAX_SEQ]. */
export class InvalidSequenceError extends Error {
  override readonly name = "InvalidSequenceError";
  constructor(readonly value: unknown) {
    super(`invalid sequence number ${String(value)}: must be an integer in [0, ${MAX_SEQ}]`);
  }
}

/** Throws `InvalidIdError` unless `value` is a valid id. */
export function assertValidId(kind: "tenant" | "session", value: unknown): asserts value is string {
  if (!isValidId(value)) throw new InvalidIdError(kind, value);
}

/** Throws `InvalidIdError` unless both ids of `ref` are valid. */
export function assertValidRef(ref: SessionRef): void {
  assertValidId("tenant", ref?.tenantId);
  assertValidId("session", ref?.sessionId);
}

/** Throws `InvalidSequenceError` unless `seq` is an integer in [0, MAX_SEQ]. */
export function assertValidSeq(seq: unknown): asserts seq is number {
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 0 || seq > MAX_SEQ) {
    throw new InvalidSequenceError(seq);
  }
}

/** `seq` zero-padded to `SEQ_DIGITS` digits; validates it. */
export function formatSeq(seq: number): string {
  assertValidSeq(seq);
  return String(seq).padStart(SEQ_DIGITS, "0");
}

/** Folder of a tenant's sessions: `{prefix}tenants/{tenantId}/sessions/`. */
export function tenantSessionsPrefix(prefix: string, tenantId: string): string {
  assertValidId("tenant", tenantId);
  return `${prefix}tenants/${tenantId}/sessions/`;
}

/** Folder of one session, ending in "/". */
export function sessionPrefix(prefix: string, ref: SessionRef): string {
  assertValidRef(ref);
  return `${tenantSessionsPrefix(prefix, ref.tenantId)}${ref.sessionId}/`;
}

const HEADER_NAME = "header.json";
export const ENTRIES_FOLDER = "entries/";
const CHUNKS_FOLDER = "chunks/";

export function headerKey(prefix: string, ref: SessionRef): string {
  return `${sessionPrefix(prefix, ref)}${HEADER_NAME}`;
}

export function entryKey(prefix: string, ref: SessionRef, seq: number): string {
  return `${sessionPrefix(prefix, ref)}${ENTRIES_FOLDER}${formatSeq(seq)}.json`;
}

export function chunkKey(prefix: string, ref: SessionRef, firstSeq: number): string {
  return `${sessionPrefix(prefix, ref)}${CHUNKS_FOLDER}${formatSeq(firstSeq)}.jsonl`;
}

/** What an object under a session folder is. */
export type SessionObject =
  | { kind: "header" }
  | { kind: "entry"; seq: number }
  | { kind: "chunk"; firstSeq: number };

const ENTRY_NAME = new RegExp(`^${ENTRIES_FOLDER}(\\d{${SEQ_DIGITS}})\\.json$`);
const CHUNK_NAME = new RegExp(`^${CHUNKS_FOLDER}(\\d{${SEQ_DIGITS}})\\.jsonl$`);

/**
 * Classifies `key` relative to the session folder `folder` (from `sessionPrefix`). Returns null
 * for keys outside the folder or not in the layout (they are ignored, never guessed at).
 */
export function parseSessionObjectKey(folder: string, key: string): SessionObject | null {
  if (!key.startsWith(folder)) return null;
  const name = key.slice(folder.length);
  if (name === HEADER_NAME) return { kind: "header" };
  const entry = ENTRY_NAME.exec(name);
  if (entry) return { kind: "entry", seq: Number(entry[1]) };
  const chunk = CHUNK_NAME.exec(name);
  if (chunk) return { kind: "chunk", firstSeq: Number(chunk[1]) };
  return null;
}

/**
 * The session id of a common prefix returned by a delimited listing of
 * `tenantSessionsPrefix(...)`, or null when it is not a valid session folder.
 */
export function sessionIdOfFolder(tenantFolder: string, commonPrefix: string): string | null {
  if (!commonPrefix.startsWith(tenantFolder) || !commonPrefix.endsWith("/")) return null;
  const id = commonPrefix.slice(tenantFolder.length, -1);
  return isValidId(id) ? id : null;
}

// ---- Workspace snapshots (docs/store.md, "Workspace snapshots")
//
// {session folder}workspace/blobs/{sha256}            file contents, stored once per session
// {session folder}workspace/trees/{sha256}.json.gz    one directory listing, gzipped (hash of the JSON)
// {session folder}workspace/snapshots/{entryId}.json  the workspace state after that entry
// {session folder}workspace/holder.json               the epoch of the disk holding the workspace

const HASH_PATTERN = /^[0-9a-f]{64}$/;
/** Entry ids as the workflow makes them (hex), or test ids; never a path. */
const ENTRY_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
const WORKSPACE_SNAPSHOTS_FOLDER = "workspace/snapshots/";

function assertHash(hash: string): void {
  if (!HASH_PATTERN.test(hash)) throw new Error(`invalid content hash ${JSON.stringify(hash.slice(0, 80))}`);
}

function assertValidEntryId(entryId: string): void {
  if (!ENTRY_ID_PATTERN.test(entryId))
    throw new Error(`invalid entry id ${JSON.stringify(entryId.slice(0, 80))}`);
}

export function workspaceBlobKey(prefix: string, ref: SessionRef, hash: string): string {
  assertHash(hash);
  return `${sessionPrefix(prefix, ref)}workspace/blobs/${hash}`;
}

export function workspaceTreeKey(prefix: string, ref: SessionRef, hash: string): string {
  assertHash(hash);
  return `${sessionPrefix(prefix, ref)}workspace/trees/${hash}.json.gz`;
}

/** Which disk holds the session's workspace copy now (an epoch: see workspace-holders.ts). */
export function workspaceHolderKey(prefix: string, ref: SessionRef): string {
  return `${sessionPrefix(prefix, ref)}workspace/holder.json`;
}

export function workspaceSnapshotsPrefix(prefix: string, ref: SessionRef): string {
  return `${sessionPrefix(prefix, ref)}${WORKSPACE_SNAPSHOTS_FOLDER}`;
}

export function workspaceSnapshotKey(prefix: string, ref: SessionRef, entryId: string): string {
  assertValidEntryId(entryId);
  return `${workspaceSnapshotsPrefix(prefix, ref)}${entryId}.json`;
}

/** The entry id of a key listed under `workspaceSnapshotsPrefix`, or null. */
export function snapshotEntryIdOfKey(folder: string, key: string): string | null {
  if (!key.startsWith(folder) || !key.endsWith(".json")) return null;
  const id = key.slice(folder.length, -".json".length);
  return ENTRY_ID_PATTERN.test(id) ? id : null;
}
