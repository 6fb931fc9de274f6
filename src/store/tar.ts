/**
 * A small POSIX tar (ustar + pax) codec for the archives `keel export --with-workspace` writes:
 * regular files, directories and symbolic links, nothing else. Written here (about 200 lines over
 * node's Buffer) instead of adding a dependency; the output opens with any `tar` (GNU, bsdtar).
 *
 * Reading accepts what common tools write for those three kinds: ustar names with a prefix, pax
 * extended headers (`path`, `linkpath`) and GNU long names (`L`, `K`). Every other entry kind
 * (hard links, devices, FIFOs, …) and every malformed header is refused with an `ArchiveError`.
 * Paths are returned as written: confining them is the caller's job (workspace-archive.ts).
 */

/** One entry of an archive. Modes are permission bits (at most 0o777 are kept). */
export type TarEntry =
  | { type: "file"; path: string; mode: number; body: Buffer }
  | { type: "dir"; path: string; mode: number }
  | { type: "symlink"; path: string; target: string };

/** An archive that cannot be read, or an entry Keel does not accept. */
export class ArchiveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ArchiveError";
  }
}

const BLOCK = 512;
const NAME_BYTES = 100;

function octal(value: number, width: number): string {
  // width − 1 digits and a NUL, as ustar readers expect.
  return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

/** One pax record `"<len> key=value\n"`, where len counts the whole record including itself. */
function paxRecord(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(rest) + 1;
  while (Buffer.byteLength(`${length}${rest}`) !== length) length += 1;
  return `${length}${rest}`;
}

/**
 * One ustar header block: `type` is the ustar type flag ("0" file, "2" symlink, "5" folder; the
 * escape suite also writes the kinds the reader refuses), `mode` is written as given.
 */
export function tarHeader(fields: {
  name: string;
  mode: number;
  size: number;
  type: string;
  link?: string;
}): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(fields.name, 0, NAME_BYTES, "utf8");
  block.write(octal(fields.mode, 8), 100, "ascii");
  block.write(octal(0, 8), 108, "ascii"); // uid
  block.write(octal(0, 8), 116, "ascii"); // gid
  block.write(octal(fields.size, 12), 124, "ascii");
  block.write(octal(0, 12), 136, "ascii"); // mtime: archives of the same state are identical
  block.write(" ".repeat(8), 148, "ascii"); // checksum placeholder
  block.write(fields.type, 156, "ascii");
  if (fields.link) block.write(fields.link, 157, NAME_BYTES, "utf8");
  block.write("ustar\0", 257, "ascii");
  block.write("00", 263, "ascii");
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
  return block;
}

const padding = (size: number): Buffer => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

/** The archive of `entries`, in the given order (uncompressed; gzip it for a `.tar.gz`). */
export function writeTar(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const name = entry.type === "dir" ? `${entry.path}/` : entry.path;
    const link = entry.type === "symlink" ? entry.target : undefined;
    const pax =
      (Buffer.byteLength(name) > NAME_BYTES ? paxRecord("path", name) : "") +
      (link !== undefined && Buffer.byteLength(link) > NAME_BYTES ? paxRecord("linkpath", link) : "");
    if (pax) {
      const body = Buffer.from(pax, "utf8");
      parts.push(tarHeader({ name: "PaxHeader", mode: 0o644, size: body.length, type: "x" }), body);
      parts.push(padding(body.length));
    }
    const shortName = name.slice(0, NAME_BYTES);
    if (entry.type === "file") {
      parts.push(
        tarHeader({ name: shortName, mode: entry.mode & 0o777, size: entry.body.length, type: "0" }),
      );
      parts.push(entry.body, padding(entry.body.length));
    } else if (entry.type === "dir") {
      parts.push(tarHeader({ name: shortName, mode: entry.mode & 0o777, size: 0, type: "5" }));
    } else {
      parts.push(
        tarHeader({ name: shortName, mode: 0o777, size: 0, type: "2", link: link?.slice(0, NAME_BYTES) }),
      );
    }
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}

/** A NUL-terminated string field. */
function text(block: Buffer, offset: number, length: number): string {
  const field = block.subarray(offset, offset + length);
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? length : end).toString("utf8");
}

function number(block: Buffer, offset: number, length: number, what: string): number {
  const raw = text(block, offset, length).trim();
  if (!/^[0-7]*$/.test(raw)) throw new ArchiveError(`tar header: ${what} is not an octal number`);
  return raw === "" ? 0 : Number.parseInt(raw, 8);
}

function checksumMatches(block: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i += 1) sum += i >= 148 && i < 156 ? 32 : (block[i] ?? 0);
  return number(block, 148, 8, "checksum") === sum;
}

function parsePax(body: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  let at = 0;
  while (at < body.length) {
    const space = body.indexOf(0x20, at);
    const length = Number.parseInt(body.subarray(at, space).toString("ascii"), 10);
    if (space === -1 || !Number.isInteger(length) || length <= 0 || at + length > body.length) {
      throw new ArchiveError("tar: malformed pax extended header");
    }
    const record = body.subarray(space + 1, at + length - 1).toString("utf8");
    const equals = record.indexOf("=");
    if (equals > 0) records.set(record.slice(0, equals), record.slice(equals + 1));
    at += length;
  }
  return records;
}

const KIND_NAMES: Record<string, string> = {
  "1": "hard link",
  "3": "character device",
  "4": "block device",
  "6": "FIFO",
  "7": "contiguous file",
};

/** The entries of an (uncompressed) archive, in order. Throws `ArchiveError` on anything else. */
export function readTar(archive: Buffer): TarEntry[] {
  const entries: TarEntry[] = [];
  let longName: string | undefined;
  let longLink: string | undefined;
  let at = 0;
  for (;;) {
    if (at + BLOCK > archive.length) throw new ArchiveError("tar: the archive ends without its end marker");
    const block = archive.subarray(at, at + BLOCK);
    if (block.every((byte) => byte === 0)) return entries;
    if (!checksumMatches(block))
      throw new ArchiveError("tar: a header's checksum does not match (not a tar archive?)");
    const size = number(block, 124, 12, "size");
    const type = String.fromCharCode(block[156] ?? 0);
    const bodyStart = at + BLOCK;
    if (bodyStart + size > archive.length) throw new ArchiveError("tar: an entry is cut short");
    const body = archive.subarray(bodyStart, bodyStart + size);
    at = bodyStart + size + padding(size).length;

    if (type === "x") {
      const pax = parsePax(body);
      longName = pax.get("path") ?? longName;
      longLink = pax.get("linkpath") ?? longLink;
      continue;
    }
    if (type === "g") continue; // global pax header: nothing Keel uses
    if (type === "L" || type === "K") {
      const value = body.toString("utf8").replace(/\0+$/, "");
      if (type === "L") longName = value;
      else longLink = value;
      continue;
    }
    const prefix = text(block, 345, 155);
    const shortName = text(block, 0, NAME_BYTES);
    const name = longName ?? (prefix ? `${prefix}/${shortName}` : shortName);
    const target = longLink ?? text(block, 157, NAME_BYTES);
    longName = undefined;
    longLink = undefined;
    const path = name.replace(/\/+$/, "");
    const mode = number(block, 100, 8, "mode") & 0o777;
    if (type === "0" || type === "\0") {
      if (name.endsWith("/")) entries.push({ type: "dir", path, mode });
      else entries.push({ type: "file", path, mode, body: Buffer.from(body) });
    } else if (type === "5") entries.push({ type: "dir", path, mode });
    else if (type === "2") entries.push({ type: "symlink", path, target });
    else {
      const kind = KIND_NAMES[type] ?? `entry type ${JSON.stringify(type)}`;
      throw new ArchiveError(
        `tar: ${JSON.stringify(name)} is a ${kind}; only files, directories and symbolic links are accepted`,
      );
    }
  }
}
