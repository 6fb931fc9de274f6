/**
 * Crafted tar archives for tests: any entry kind, path, link text and mode, written with the
 * `tar` package's header codec and nothing checked, so malicious entries can be expressed.
 */
import { gzipSync } from "node:zlib";
import { Header, type HeaderData, Pax } from "tar";

export interface FixtureEntry {
  path: string;
  /** Default "File". */
  type?: NonNullable<HeaderData["type"]>;
  /** Default 0o644 (0o755 for directories). */
  mode?: number;
  body?: string | Buffer;
  linkpath?: string;
  /** Device numbers of a character or block device entry. */
  devmaj?: number;
  devmin?: number;
}

const pad = (size: number) => Buffer.alloc((512 - (size % 512)) % 512);

/** One entry's header (with a pax header first when needed) and padded body. */
export function fixtureEntry(entry: FixtureEntry): Buffer {
  const body = Buffer.from(entry.body ?? "");
  const type = entry.type ?? "File";
  const data: HeaderData = {
    path: entry.path,
    type,
    mode: entry.mode ?? (type === "Directory" ? 0o755 : 0o644),
    size: body.length,
    uid: 0,
    gid: 0,
    mtime: new Date(0),
    ...(entry.linkpath !== undefined ? { linkpath: entry.linkpath } : {}),
    ...(entry.devmaj !== undefined ? { devmaj: entry.devmaj, devmin: entry.devmin ?? 0 } : {}),
  };
  const block = Buffer.alloc(512);
  const parts: Buffer[] = [];
  if (new Header(data).encode(block, 0))
    parts.push(new Pax({ path: entry.path, linkpath: entry.linkpath }).encode());
  parts.push(block, body, pad(body.length));
  return Buffer.concat(parts);
}

/** An uncompressed archive of `entries`, with its end marker. */
export const tarOf = (entries: FixtureEntry[]): Buffer =>
  Buffer.concat([...entries.map(fixtureEntry), Buffer.alloc(1024)]);

/** A gzipped archive of `entries`. */
export const tarGzOf = (entries: FixtureEntry[]): Buffer => gzipSync(tarOf(entries));

export const SESSION_JSONL =
  '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":""}\n';
export const sessionEntry: FixtureEntry = { path: "session.jsonl", body: SESSION_JSONL };

/** `buffer` as a stream of chunks of `size` bytes (a request body as it arrives). */
export async function* chunked(buffer: Buffer, size = 16 * 1024): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < buffer.length; at += size) yield buffer.subarray(at, at + size);
}

/**
 * A gzip bomb: a session file, then files of `fileBytes` zeros each adding up to `totalBytes`,
 * as a stream of gzip members (a member of 1 MiB of zeros compresses to about 1 KiB and is
 * repeated), so gigabytes are described by megabytes and never held. `read` counts the
 * compressed bytes taken from the stream so far.
 */
export function gzipBomb(
  totalBytes: number,
  fileBytes = 200 * 1024 ** 2,
): { source: AsyncGenerator<Uint8Array>; read: () => number } {
  const MIB = 1024 ** 2;
  const zeros = gzipSync(Buffer.alloc(MIB), { level: 9 });
  let taken = 0;
  const take = (chunk: Buffer) => {
    taken += chunk.length;
    return chunk;
  };
  async function* source(): AsyncGenerator<Uint8Array> {
    yield take(gzipSync(fixtureEntry(sessionEntry)));
    for (let file = 0; file * fileBytes < totalBytes; file++) {
      yield take(gzipSync(headerOnly(`workspace/zeros-${file}`, fileBytes)));
      for (let i = 0; i < fileBytes / MIB; i++) yield take(zeros);
    }
  }
  return { source: source(), read: () => taken };
}

/** The header of a regular file of `size` bytes whose body the caller writes (a stream of zeros). */
export function headerOnly(path: string, size: number): Buffer {
  const block = Buffer.alloc(512);
  new Header({ path, type: "File", mode: 0o644, size, uid: 0, gid: 0, mtime: new Date(0) }).encode(block, 0);
  return block;
}
