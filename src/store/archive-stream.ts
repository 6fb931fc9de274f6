/**
 * Streaming `.tar.gz` reading and writing with limits, over node's asynchronous zlib and the
 * `tar` package's parser and header codec. Nothing here holds an archive in memory or inflates
 * it in one synchronous call: gunzip runs on the thread pool in chunks of at most 16 KiB, every
 * chunk is counted against the limits before the tar parser sees it, and the parser is fed
 * only as fast as the caller consumes its entries (back-pressure), so a gzip bomb is refused
 * after reading only as much as the limits allow and the event loop never waits on it.
 */
import { pipeline, Readable } from "node:stream";
import { createGunzip, createGzip } from "node:zlib";
import { Header, type HeaderData, Parser, Pax, type ReadEntry } from "tar";

/** What an archive may unpack to; over any of them the read stops with an `ArchiveError` (`overLimit`). */
export interface ArchiveLimits {
  /** Largest single entry (its size as the header states it, checked before its body is read). */
  maxEntryBytes: number;
  /** Largest unpacked (tar) stream: headers, bodies and padding. */
  maxTotalBytes: number;
  /** Most entries (files, folders, links; pax and long-name headers not counted). */
  maxEntries: number;
  /** Most unpacked bytes per compressed byte read, once more than `RATIO_GRACE_BYTES` were unpacked. */
  maxExpansionRatio: number;
}

export const DEFAULT_ARCHIVE_LIMITS: Readonly<ArchiveLimits> = {
  maxEntryBytes: 256 * 1024 ** 2,
  maxTotalBytes: 1024 ** 3,
  maxEntries: 100_000,
  maxExpansionRatio: 100,
};

/**
 * The expansion ratio is judged only past this many unpacked bytes: a small archive of tar
 * headers (512-byte blocks that are mostly zeros) legitimately compresses far better than 100:1.
 */
const RATIO_GRACE_BYTES = 1024 ** 2;
/** Largest pax or GNU long-name header (a path or link text never needs more). */
const MAX_META_BYTES = 64 * 1024;
const BLOCK = 512;

/** An archive that cannot be read, or that Keel refuses; `overLimit`: it exceeds an `ArchiveLimits` limit. */
export class ArchiveError extends Error {
  constructor(
    message: string,
    readonly overLimit = false,
  ) {
    super(message);
    this.name = "ArchiveError";
  }
}

/** zlib's own errors (bad header, bad data, truncated input) carry `Z_*` codes. */
const isZlibError = (error: unknown): boolean =>
  typeof error === "object" && error !== null && String((error as { code?: unknown }).code).startsWith("Z_");

/**
 * The gunzipped bytes of `source`, chunk by chunk, counted against `maxTotalBytes` and
 * `maxExpansionRatio` before each chunk is handed on. Stopping the iteration early stops the
 * read of `source` (its iterator is returned). Errors of `source` itself pass through unchanged.
 */
export async function* gunzipWithLimits(
  source: AsyncIterable<Uint8Array>,
  limits: ArchiveLimits,
): AsyncGenerator<Buffer> {
  let compressed = 0;
  async function* counted(): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      compressed += chunk.byteLength;
      yield chunk;
    }
  }
  const gunzip = pipeline(Readable.from(counted()), createGunzip(), () => undefined);
  let unpacked = 0;
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      unpacked += chunk.length;
      if (unpacked > limits.maxTotalBytes) {
        throw new ArchiveError(`the archive unpacks to more than ${limits.maxTotalBytes} bytes`, true);
      }
      if (unpacked > RATIO_GRACE_BYTES && unpacked > compressed * limits.maxExpansionRatio) {
        throw new ArchiveError(
          `the archive expands more than ${limits.maxExpansionRatio} times (${unpacked} bytes from ${compressed} read)`,
          true,
        );
      }
      yield chunk;
    }
  } catch (error) {
    if (isZlibError(error))
      throw new ArchiveError(`the archive is not valid gzip: ${(error as Error).message}`);
    throw error;
  } finally {
    gunzip.destroy();
  }
}

/**
 * Parses the (uncompressed) tar stream `chunks` and calls `onEntry` for each file, folder, link
 * or other entry, one at a time in archive order: the next entry is not handed over before the
 * previous call has settled, and `chunks` is not read further while an entry's body waits to be
 * consumed. An entry's body not consumed by `onEntry` is skipped. Throws the first error of
 * `onEntry`, of `chunks`, or an `ArchiveError` for a malformed archive (bad checksum, truncated,
 * no entry at all, a compressed stream inside).
 */
export async function readTarStream(
  chunks: AsyncIterable<Buffer>,
  onEntry: (entry: ReadEntry) => Promise<void>,
): Promise<void> {
  // strict: every warning (bad checksum, truncation, an unreadable header) is an error.
  const parser = new Parser({ strict: true, maxMetaEntrySize: MAX_META_BYTES });
  let failure: { error: unknown } | undefined;
  let signalFailure: () => void = () => undefined;
  const failed = new Promise<void>((resolve) => {
    signalFailure = resolve;
  });
  /** The entry `onEntry` is reading: ended on a failure elsewhere, so that it cannot wait for more. */
  let current: ReadEntry | undefined;
  const fail = (error: unknown) => {
    if (failure) return;
    failure = { error };
    signalFailure();
    // Ended, not destroyed: a reader that has not started yet still sees the end.
    if (current?.writable) current.end();
  };
  let handling = Promise.resolve();
  parser.on("entry", (entry: ReadEntry) => {
    handling = handling
      .then(async () => {
        if (failure) return;
        current = entry;
        await onEntry(entry);
      })
      .catch(fail)
      .finally(() => {
        current = undefined;
        // Whatever was not read is discarded, so the parser can go on.
        entry.resume();
      });
  });
  parser.on("ignoredEntry", (entry: ReadEntry) =>
    fail(new ArchiveError(`tar: a ${entry.type} header is larger than ${MAX_META_BYTES} bytes`)),
  );
  parser.on("error", (error: Error) => fail(new ArchiveError(`tar: ${error.message}`)));
  // Not events.once: it would reject on the parser's "error", which `fail` handles.
  const event = (name: string) => new Promise<void>((resolve) => parser.once(name, () => resolve()));
  const ended = event("end");
  try {
    let first = true;
    for await (const chunk of chunks) {
      if (failure) break;
      if (first) {
        first = false;
        // The parser would inflate a compressed stream it finds inside by itself, synchronously
        // and outside these limits: a tar archive never starts with these bytes.
        if (isCompressed(chunk)) throw new ArchiveError("the archive is compressed twice");
      }
      if (!parser.write(chunk)) await Promise.race([event("drain"), failed]);
    }
    if (!failure) {
      parser.end();
      await Promise.race([ended, failed]);
    }
  } catch (error) {
    fail(error);
  }
  await handling;
  if (failure) throw failure.error;
}

/**
 * Reads the gzipped archive `source` once, unpacking nothing, and refuses it at the first entry
 * that crosses a limit of `limits` (the entry count, an entry's size, the unpacked total, the
 * expansion ratio) or that the tar reader cannot parse. Every compressed chunk is handed to
 * `keep` before it is judged (the caller spools it, to unpack it from there once it passed):
 * an archive over a limit is refused after reading its headers only, without writing the files
 * before the crossing entry, which costs far more (100,000 empty files: tens of seconds).
 */
export async function checkArchiveLimits(
  source: AsyncIterable<Uint8Array>,
  limits: ArchiveLimits,
  keep: (chunk: Uint8Array) => Promise<unknown>,
): Promise<{ entries: number }> {
  async function* kept(): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      await keep(chunk);
      yield chunk;
    }
  }
  let entries = 0;
  await readTarStream(gunzipWithLimits(kept(), limits), async (entry) => {
    entries += 1;
    if (entries > limits.maxEntries) {
      throw new ArchiveError(`the archive has more than ${limits.maxEntries} entries`, true);
    }
    if (entry.size > limits.maxEntryBytes) {
      throw new ArchiveError(
        `archive entry ${JSON.stringify(entry.path)} is larger than ${limits.maxEntryBytes} bytes`,
        true,
      );
    }
  });
  return { entries };
}

const isCompressed = (chunk: Buffer): boolean =>
  (chunk[0] === 0x1f && chunk[1] === 0x8b) ||
  chunk.subarray(0, 4).equals(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]));

/** Zero bytes that fill a body of `size` bytes up to the next 512-byte block. */
export const tarPadding = (size: number): Buffer => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

/**
 * The header blocks of one entry: a pax header first when the path or link text does not fit
 * ustar's fields. Owner 0, time 0: archives of the same tree are identical.
 */
export function tarHeader(fields: {
  path: string;
  type: "File" | "Directory" | "SymbolicLink";
  mode: number;
  size?: number;
  linkpath?: string;
}): Buffer {
  const data: HeaderData = { ...fields, size: fields.size ?? 0, uid: 0, gid: 0, mtime: new Date(0) };
  const block = Buffer.alloc(BLOCK);
  const needsPax = new Header(data).encode(block, 0);
  if (!needsPax) return block;
  return Buffer.concat([new Pax({ path: fields.path, linkpath: fields.linkpath }).encode(), block]);
}

/** The end of a tar stream: two zero blocks. */
export const TAR_END = Buffer.alloc(BLOCK * 2);

/** `tarBlocks` gzipped, as a stream; destroying it stops (returns) the generator. */
export function gzipStream(tarBlocks: AsyncIterable<Buffer>): Readable {
  return pipeline(Readable.from(tarBlocks), createGzip(), () => undefined);
}
