// Over 400 lines: one class whose write, read, seal and list paths share the per-session progress record and the cache.
/**
 * S3 session store: one immutable object per session entry, written with `If-None-Match: *` at a
 * key the caller assigned (tenant, session, sequence number), plus immutable chunk objects of
 * `chunkSize` consecutive entries so a cold read costs a few chunk GETs and a short tail. Objects
 * are never overwritten; only `deleteSession` removes a whole session folder.
 * See docs/store.md for the layout and the rules.
 */
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  type S3Client,
} from "@aws-sdk/client-s3";
import { BoundedCache } from "../core/bounded-cache";
import { serializeEntry, serializeSession } from "../core/session-codec";
import type { SessionEntry, SessionHeader } from "../core/session-types";
import { mapWithLimit } from "./bounded-map";
import { ConditionalObjects, readAfterConflict } from "./conditional-objects";
import { EntryCache } from "./entry-cache";
import type { S3Settings } from "./s3-config";
import { isNotFound, listObjects } from "./s3-requests";
import {
  EntryConflictError,
  MissingObjectError,
  SessionExistsError,
  SessionNotFoundError,
} from "./session-errors";
import {
  assertValidId,
  assertValidSeq,
  chunkKey,
  ENTRIES_FOLDER,
  entryKey,
  headerKey,
  parseSessionObjectKey,
  type SessionRef,
  sessionIdOfFolder,
  sessionPrefix,
  tenantSessionsPrefix,
} from "./session-keys";
import {
  deepFreeze,
  ENTRY_KIND,
  HEADER_KIND,
  type Parse,
  type PreparedWrite,
  parseChunk,
  parseEntry,
  parseHeader,
  prepareWrite,
} from "./session-objects";

/** Entries per chunk object unless configured otherwise. Part of the storage layout: see docs. */
const DEFAULT_CHUNK_SIZE = 256;
/** S3 requests one store operation keeps in flight at most. */
const DEFAULT_REQUEST_CONCURRENCY = 32;
/** Page size of a `listSessions` call when none is given, and the largest S3 allows. */
export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 1000;
/** Keys per DeleteObjects request (S3's maximum). */
const DELETE_BATCH = 1000;

function batchesOf<T>(items: readonly T[], size: number): T[][] {
  const batches: T[][] = [];
  for (let at = 0; at < items.length; at += size) batches.push(items.slice(at, at + size));
  return batches;
}
/** Sessions whose read progress a store remembers (an LRU of a few numbers per session). */
const MAX_TRACKED_SESSIONS = 10_000;

const JSON_CONTENT_TYPE = "application/json";
const JSONL_CONTENT_TYPE = "application/x-ndjson";

export interface SessionStoreOptions {
  /** Entries per chunk object (default 256). Must not change for data already written. */
  chunkSize?: number;
  /** Cache of immutable objects; share one per worker process. A private one by default. */
  cache?: EntryCache;
  /** S3 requests kept in flight by one operation (default 32). */
  concurrency?: number;
  /**
   * Whether `readEntries` writes chunk objects a writer could not (entries written out of order);
   * default true. Turn off for processes with read-only access to the bucket.
   */
  sealChunksOnRead?: boolean;
}

export interface CreateSessionResult {
  /** False when a header was already stored; `header` is then the stored one. */
  created: boolean;
  header: SessionHeader;
}

export interface PutEntryResult {
  /** False when this very entry (same id) was already stored: a retry adopted it. */
  written: boolean;
  entry: SessionEntry;
}

interface SequencedEntry {
  seq: number;
  entry: SessionEntry;
}

export interface ReadEntriesOptions {
  /** Highest sequence number to return (inclusive). */
  toSeq?: number;
  /** Stop at the first missing sequence number (a live run may still be writing it). */
  untilGap?: boolean;
}

export interface ReadEntriesResult {
  /** In sequence order. The objects are shared with the cache and frozen. */
  entries: SequencedEntry[];
  /** First free sequence number after the contiguous run of entries starting at 0. */
  nextSeq: number;
  /** Missing sequence numbers below the highest entry read (bounded by `toSeq`). */
  gaps: number[];
}

export interface ListSessionsOptions {
  /** Sessions per page, 1..1000 (default 100). */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

interface SessionSummary {
  sessionId: string;
  /** Null when the folder has entries but no header (entries written without `createSession`). */
  header: SessionHeader | null;
  /** When the session's newest object (header, entry or chunk) was written, as an ISO time. */
  lastActivityAt?: string;
}

export interface SessionPage {
  sessions: SessionSummary[];
  /** Present when more sessions follow. */
  nextCursor?: string;
}

export interface ImportResult {
  entries: number;
  chunks: number;
}

/** What this store learned about a session; only ever grows, since objects are immutable. */
interface SessionProgress {
  /** Every sequence number below this is stored. */
  contiguousEnd: number;
  /** Every chunk starting below this is stored. */
  sealedEnd: number;
}

/** One listing of a session folder (or of its entries after a known prefix). */
interface SessionListing {
  hasHeader: boolean;
  entrySeqs: Set<number>;
  chunkStarts: Set<number>;
}

export class SessionStore {
  readonly chunkSize: number;
  readonly cache: EntryCache;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly concurrency: number;
  private readonly sealChunksOnRead: boolean;
  private readonly progress = new BoundedCache<string, SessionProgress>({ capacity: MAX_TRACKED_SESSIONS });
  private readonly conditional: ConditionalObjects;

  constructor(
    private readonly client: S3Client,
    settings: S3Settings,
    options: SessionStoreOptions = {},
  ) {
    this.chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
    if (!Number.isSafeInteger(this.chunkSize) || this.chunkSize < 2) {
      throw new RangeError(`chunkSize must be an integer >= 2, got ${this.chunkSize}`);
    }
    this.concurrency = options.concurrency ?? DEFAULT_REQUEST_CONCURRENCY;
    if (!Number.isSafeInteger(this.concurrency) || this.concurrency < 1) {
      throw new RangeError(`concurrency must be a positive integer, got ${this.concurrency}`);
    }
    this.cache = options.cache ?? new EntryCache();
    this.sealChunksOnRead = options.sealChunksOnRead ?? true;
    this.bucket = settings.bucket;
    this.prefix = settings.prefix;
    this.conditional = new ConditionalObjects(client, settings.bucket);
  }

  /**
   * Writes the header of a new session (conditional create). When a header is already stored,
   * returns it with `created: false` (whether or not it equals `header`).
   */
  async createSession(ref: SessionRef, header: SessionHeader): Promise<CreateSessionResult> {
    const key = headerKey(this.prefix, ref);
    const written = prepareWrite(key, header, HEADER_KIND);
    if (await this.conditional.createIfAbsent(key, written.body, JSON_CONTENT_TYPE)) {
      this.cacheWritten(key, written);
      return { created: true, header };
    }
    return { created: false, header: await this.readAfterConflict(key, parseHeader) };
  }

  /**
   * Deletes everything stored under the session's folder: header, entries, chunks, tool-call
   * markers and workspace snapshots (records, trees, blobs). The header goes last, so a deletion
   * that fails half-way leaves a session that is still listed and can be deleted again. Returns
   * the number of objects deleted (0: nothing was stored). Callers make sure no run is writing.
   */
  async deleteSession(ref: SessionRef): Promise<{ deletedObjects: number }> {
    const folder = sessionPrefix(this.prefix, ref);
    const header = headerKey(this.prefix, ref);
    const keys: string[] = [];
    for await (const object of listObjects(this.client, { Bucket: this.bucket, Prefix: folder })) {
      if (object.Key && object.Key !== header) keys.push(object.Key);
    }
    const hadHeader = await this.sessionExists(ref);
    for (const batch of [...batchesOf(keys, DELETE_BATCH), ...(hadHeader ? [[header]] : [])]) {
      const answer = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      const failed = answer.Errors ?? [];
      if (failed.length > 0) {
        throw new Error(
          `deleting session ${ref.sessionId}: ${failed.length} objects not deleted (first: ${failed[0]?.Key}: ${failed[0]?.Code})`,
        );
      }
    }
    this.cache.dropPrefix(folder);
    this.progress.delete(folder);
    return { deletedObjects: keys.length + (hadHeader ? 1 : 0) };
  }

  /** The stored header; throws `SessionNotFoundError` when there is none. */
  async getHeader(ref: SessionRef): Promise<SessionHeader> {
    const header = await this.readObject(headerKey(this.prefix, ref), parseHeader);
    if (!header) throw new SessionNotFoundError(ref);
    return header;
  }

  /** Whether the session's header is stored. */
  async sessionExists(ref: SessionRef): Promise<boolean> {
    const key = headerKey(this.prefix, ref);
    if (this.cache.has(key)) return true;
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  /**
   * Stores `entry` at `seq` unless something is stored there already. A retry finds its own
   * entry (same id) and adopts it (`written: false`); a different entry at `seq` throws
   * `EntryConflictError`. When `seq` completes a chunk, the chunk object is written as well (on
   * an adopting retry too, so a crash between the two writes heals).
   */
  async putEntry(ref: SessionRef, seq: number, entry: SessionEntry): Promise<PutEntryResult> {
    const result = await this.writeEntry(ref, seq, entry);
    if (seq % this.chunkSize === this.chunkSize - 1) {
      await this.sealChunkAfterWrite(ref, seq - this.chunkSize + 1);
    }
    return result;
  }

  /** The entry stored at `seq`, or undefined when there is none. */
  async getEntry(ref: SessionRef, seq: number): Promise<SessionEntry | undefined> {
    return this.readObject(entryKey(this.prefix, ref, seq), parseEntry);
  }

  /**
   * Reads a session's entries in sequence order. Lists the session (one LIST page per 1000
   * objects; after an earlier read on this store only the entries after the known contiguous
   * prefix are listed), takes what the cache holds, and fetches the rest — whole chunks where a
   * chunk object exists, single entries otherwise. Throws `SessionNotFoundError` when the
   * session has neither header nor entries.
   */
  async readEntries(ref: SessionRef, options: ReadEntriesOptions = {}): Promise<ReadEntriesResult> {
    const folder = sessionPrefix(this.prefix, ref);
    const toSeq = options.toSeq ?? Number.POSITIVE_INFINITY;
    if (options.toSeq !== undefined) assertValidSeq(options.toSeq);
    const known = this.progressOf(folder);
    if (options.toSeq !== undefined && options.toSeq < known.contiguousEnd) {
      // Everything asked for is known to be stored, and stored objects never change: no LIST.
      const size = this.chunkSize;
      const seqs = Array.from({ length: options.toSeq + 1 }, (_, seq) => seq);
      const entries = await this.resolveEntries(ref, seqs, (first) => first + size <= known.sealedEnd);
      return {
        entries: seqs.map((seq) => ({ seq, entry: entries.get(seq)! })),
        nextSeq: known.contiguousEnd,
        gaps: [],
      };
    }
    const listing = await this.listSession(ref, folder, known.contiguousEnd);
    if (known.contiguousEnd === 0 && !listing.hasHeader && listing.entrySeqs.size === 0) {
      throw new SessionNotFoundError(ref);
    }

    const size = this.chunkSize;
    const chunkStored = (first: number) => listing.chunkStarts.has(first) || first + size <= known.sealedEnd;
    const isStored = (seq: number) =>
      seq < known.contiguousEnd || listing.entrySeqs.has(seq) || chunkStored(seq - (seq % size));

    let highest = known.contiguousEnd - 1;
    for (const seq of listing.entrySeqs) highest = Math.max(highest, seq);
    for (const first of listing.chunkStarts) highest = Math.max(highest, first + size - 1);
    let contiguousEnd = known.contiguousEnd;
    while (contiguousEnd <= highest && isStored(contiguousEnd)) contiguousEnd++;

    const upper = Math.min(highest, toSeq);
    const wanted: number[] = [];
    const gaps: number[] = [];
    for (let seq = 0; seq <= upper; seq++) {
      if (seq < contiguousEnd || isStored(seq)) wanted.push(seq);
      else gaps.push(seq);
    }
    const readUpTo = options.untilGap ? Math.min(contiguousEnd, upper + 1) : upper + 1;
    const entries = await this.resolveEntries(
      ref,
      wanted.filter((seq) => seq < readUpTo),
      chunkStored,
    );

    // Concurrent reads of one session share this record; it only ever grows.
    known.contiguousEnd = Math.max(known.contiguousEnd, contiguousEnd);
    while (listing.chunkStarts.has(known.sealedEnd)) known.sealedEnd += size;
    if (this.sealChunksOnRead) await this.sealReadChunks(ref, known, entries);

    return {
      entries: [...entries].sort((a, b) => a[0] - b[0]).map(([seq, entry]) => ({ seq, entry })),
      nextSeq: contiguousEnd,
      gaps,
    };
  }

  /**
   * One page of a tenant's sessions (in id order) with their headers and last activity. The
   * last activity costs one LIST request per 1,000 objects of each session on the page.
   */
  async listSessions(tenantId: string, options: ListSessionsOptions = {}): Promise<SessionPage> {
    assertValidId("tenant", tenantId);
    const limit = options.limit ?? DEFAULT_LIST_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new RangeError(`limit must be an integer in [1, ${MAX_LIST_LIMIT}], got ${limit}`);
    }
    const folder = tenantSessionsPrefix(this.prefix, tenantId);
    const page = await this.client.send(
      new ListObjectsV2Command({
        Bucket: this.bucket,
        Prefix: folder,
        Delimiter: "/",
        MaxKeys: limit,
        ContinuationToken: options.cursor,
      }),
    );
    const ids = (page.CommonPrefixes ?? [])
      .map((common) => sessionIdOfFolder(folder, common.Prefix ?? ""))
      .filter((id): id is string => id !== null);
    const summaries = await mapWithLimit(ids, this.concurrency, async (sessionId) => {
      const ref = { tenantId, sessionId };
      const [header, lastActivityAt] = await Promise.all([
        this.readObject(headerKey(this.prefix, ref), parseHeader),
        this.lastWriteOf(sessionPrefix(this.prefix, ref)),
      ]);
      // A folder without a single object is a deleted session that a store keeping directory
      // entries (SeaweedFS) still lists: nothing of it is left to show.
      if (!header && !lastActivityAt) return undefined;
      return { sessionId, header: header ?? null, ...(lastActivityAt ? { lastActivityAt } : {}) };
    });
    const sessions = summaries.filter((summary): summary is SessionSummary => summary !== undefined);
    return page.IsTruncated && page.NextContinuationToken
      ? { sessions, nextCursor: page.NextContinuationToken }
      : { sessions };
  }

  /**
   * The whole session as one pi-format JSONL file: header line, then every stored entry in
   * sequence order (gaps are skipped; a finished run leaves none).
   */
  async exportJsonl(ref: SessionRef): Promise<string> {
    const header = await this.getHeader(ref);
    const { entries } = await this.readEntries(ref);
    return serializeSession({ header, entries: entries.map(({ entry }) => entry) });
  }

  /**
   * Stores a whole session: the header (throws `SessionExistsError` when the session exists),
   * then `entries` at sequence numbers 0..n-1 in parallel, then every complete chunk. An
   * interrupted import leaves a partial session behind; with `resume` it is finished by the same
   * call again (a header stored with the same `parentSession` is taken as that import's, and
   * entries already stored with the same ids are adopted: a retried activity that imports a
   * session under an id of its own). Without it, a stored header is `SessionExistsError`.
   */
  async importEntries(
    ref: SessionRef,
    header: SessionHeader,
    entries: readonly SessionEntry[],
    options: { resume?: boolean } = {},
  ): Promise<ImportResult> {
    const key = headerKey(this.prefix, ref);
    const written = prepareWrite(key, header, HEADER_KIND);
    if (await this.conditional.createIfAbsent(key, written.body, JSON_CONTENT_TYPE))
      this.cacheWritten(key, written);
    else if (!options.resume || (await this.getHeader(ref))?.parentSession !== header.parentSession)
      throw new SessionExistsError(ref);

    await mapWithLimit(entries, this.concurrency, (entry, seq) => this.writeEntry(ref, seq, entry));
    const chunkStarts: number[] = [];
    for (let first = 0; first + this.chunkSize <= entries.length; first += this.chunkSize) {
      chunkStarts.push(first);
    }
    await mapWithLimit(chunkStarts, this.concurrency, (first) =>
      this.writeChunk(ref, first, entries.slice(first, first + this.chunkSize)),
    );
    return { entries: entries.length, chunks: chunkStarts.length };
  }

  // --- entries and chunks ---------------------------------------------------------------

  private async writeEntry(ref: SessionRef, seq: number, entry: SessionEntry): Promise<PutEntryResult> {
    const key = entryKey(this.prefix, ref, seq);
    const written = prepareWrite(key, entry, ENTRY_KIND);
    if (await this.conditional.createIfAbsent(key, written.body, JSON_CONTENT_TYPE)) {
      this.cacheWritten(key, written);
      this.extendContiguous(ref, seq);
      return { written: true, entry };
    }
    const stored = await this.readAfterConflict(key, parseEntry);
    if (stored.id !== entry.id) throw new EntryConflictError(ref, seq, entry.id, stored.id);
    this.extendContiguous(ref, seq);
    return { written: false, entry: stored };
  }

  /**
   * Writes the chunk starting at `first` when all its entries are stored. When one is missing
   * (parallel writes landing out of order) nothing is written; a later `readEntries` seals it.
   */
  private async sealChunkAfterWrite(ref: SessionRef, first: number): Promise<void> {
    const known = this.progressOf(sessionPrefix(this.prefix, ref));
    if (first + this.chunkSize <= known.sealedEnd) return;
    const seqs = Array.from({ length: this.chunkSize }, (_, i) => first + i);
    const entries = await mapWithLimit(seqs, this.concurrency, (seq) => this.getEntry(ref, seq));
    if (entries.some((entry) => entry === undefined)) return;
    await this.writeChunk(ref, first, entries as SessionEntry[]);
    if (known.sealedEnd === first) known.sealedEnd += this.chunkSize;
  }

  /** Seals complete chunks of the contiguous prefix whose entries this read holds. */
  private async sealReadChunks(
    ref: SessionRef,
    known: SessionProgress,
    entries: Map<number, SessionEntry>,
  ): Promise<void> {
    const size = this.chunkSize;
    while (known.sealedEnd + size <= known.contiguousEnd) {
      const first = known.sealedEnd;
      const chunk: SessionEntry[] = [];
      for (let seq = first; seq < first + size; seq++) {
        const entry = entries.get(seq);
        if (!entry) return;
        chunk.push(entry);
      }
      await this.writeChunk(ref, first, chunk);
      known.sealedEnd += size;
    }
  }

  /** Conditional create of a chunk; an existing chunk holds the same immutable entries. */
  private async writeChunk(ref: SessionRef, first: number, entries: readonly SessionEntry[]): Promise<void> {
    const body = `${entries.map((entry) => serializeEntry(entry)).join("\n")}\n`;
    await this.conditional.createIfAbsent(chunkKey(this.prefix, ref, first), body, JSONL_CONTENT_TYPE);
  }

  /**
   * The entries at `seqs`, from the cache where possible, else from chunk objects (where a chunk
   * is stored and more than one of its entries is needed) and entry objects.
   */
  private async resolveEntries(
    ref: SessionRef,
    seqs: readonly number[],
    chunkStored: (first: number) => boolean,
  ): Promise<Map<number, SessionEntry>> {
    const size = this.chunkSize;
    const found = new Map<number, SessionEntry>();
    const byChunk = new Map<number, number[]>();
    for (const seq of seqs) {
      const first = seq - (seq % size);
      const group = byChunk.get(first);
      if (group) group.push(seq);
      else byChunk.set(first, [seq]);
    }

    const chunksToFetch: number[] = [];
    const entriesToFetch: number[] = [];
    for (const [first, group] of byChunk) {
      const stored = chunkStored(first);
      const cachedChunk = stored
        ? this.cache.get<SessionEntry[]>(chunkKey(this.prefix, ref, first))
        : undefined;
      if (cachedChunk) {
        for (const seq of group) found.set(seq, cachedChunk[seq - first]!);
        continue;
      }
      const missing: number[] = [];
      for (const seq of group) {
        const cached = this.cache.get<SessionEntry>(entryKey(this.prefix, ref, seq));
        if (cached) found.set(seq, cached);
        else missing.push(seq);
      }
      if (stored && missing.length > 1) chunksToFetch.push(first);
      else entriesToFetch.push(...missing);
    }

    const fetches: Array<() => Promise<void>> = [
      ...chunksToFetch.map((first) => async () => {
        const key = chunkKey(this.prefix, ref, first);
        const chunk = await this.fetchObject(key, (k, text) => parseChunk(k, text, size));
        if (!chunk) throw new MissingObjectError(key);
        for (const seq of byChunk.get(first) ?? []) found.set(seq, chunk[seq - first]!);
      }),
      ...entriesToFetch.map((seq) => async () => {
        const key = entryKey(this.prefix, ref, seq);
        const entry = await this.fetchObject(key, parseEntry);
        if (!entry) throw new MissingObjectError(key);
        found.set(seq, entry);
      }),
    ];
    await mapWithLimit(fetches, this.concurrency, (fetch) => fetch());
    return found;
  }

  /**
   * Lists the session folder; when `contiguousEnd` > 0 (everything below it is known to be
   * stored) only the entry keys after it, which is one request for a session read before.
   */
  private async listSession(ref: SessionRef, folder: string, contiguousEnd: number): Promise<SessionListing> {
    const listing: SessionListing = { hasHeader: false, entrySeqs: new Set(), chunkStarts: new Set() };
    const incremental = contiguousEnd > 0;
    const objects = listObjects(this.client, {
      Bucket: this.bucket,
      Prefix: incremental ? `${folder}${ENTRIES_FOLDER}` : folder,
      StartAfter: incremental ? entryKey(this.prefix, ref, contiguousEnd - 1) : undefined,
    });
    for await (const object of objects) {
      const parsed = parseSessionObjectKey(folder, object.Key ?? "");
      if (parsed?.kind === "header") listing.hasHeader = true;
      else if (parsed?.kind === "entry") listing.entrySeqs.add(parsed.seq);
      else if (parsed?.kind === "chunk" && parsed.firstSeq % this.chunkSize === 0) {
        listing.chunkStarts.add(parsed.firstSeq);
      }
    }
    return listing;
  }

  /** An entry stored right after the known contiguous prefix extends it (reads then skip the LIST). */
  private extendContiguous(ref: SessionRef, seq: number): void {
    const known = this.progressOf(sessionPrefix(this.prefix, ref));
    if (seq === known.contiguousEnd) known.contiguousEnd = seq + 1;
  }

  /** The newest LastModified under `folder` (ISO), or undefined for an empty folder. */
  private async lastWriteOf(folder: string): Promise<string | undefined> {
    let newest = 0;
    for await (const object of listObjects(this.client, { Bucket: this.bucket, Prefix: folder })) {
      newest = Math.max(newest, object.LastModified?.getTime() ?? 0);
    }
    return newest > 0 ? new Date(newest).toISOString() : undefined;
  }

  /** The store's record for a session folder, created empty; an LRU bounded in sessions. */
  private progressOf(folder: string): SessionProgress {
    let record = this.progress.get(folder);
    if (!record) {
      // Forgotten (or never known): the next read lists the folder again from the start.
      record = { contiguousEnd: 0, sealedEnd: 0 };
      this.progress.set(folder, record);
    }
    return record;
  }

  // --- S3 primitives ----------------------------------------------------------------------

  /** The parsed object at `key` through the cache; undefined when there is none. */
  private async readObject<T>(key: string, parse: Parse<T>): Promise<T | undefined> {
    const cached = this.cache.get<T>(key);
    return cached !== undefined ? cached : this.fetchObject(key, parse);
  }

  /** GETs, parses and caches the object at `key`, bypassing the cache lookup. */
  private async fetchObject<T>(key: string, parse: Parse<T>): Promise<T | undefined> {
    let text: string;
    try {
      const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      text = (await response.Body?.transformToString("utf-8")) ?? "";
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
    const value = deepFreeze(parse(key, text));
    this.cache.set(key, value, Buffer.byteLength(text));
    return value;
  }

  /** Reads an object a 412 said exists, allowing the winning write a moment to become visible. */
  private async readAfterConflict<T>(key: string, parse: Parse<T>): Promise<T> {
    const value = await readAfterConflict(() => this.readObject(key, parse));
    if (value === undefined) throw new MissingObjectError(key);
    return value;
  }

  /** Caches what was just written, as parsed from the written bytes (what a reader would get). */
  private cacheWritten(key: string, written: PreparedWrite): void {
    this.cache.set(key, deepFreeze(written.value), Buffer.byteLength(written.body));
  }
}
