/** Small file-content checks shared by the file tools. */

/** Bytes inspected to tell text, binary and image files apart. */
export const SNIFF_BYTES = 8192;
/** Images larger than this are not inlined (base64 stays under the providers' 5 MB image cap). */
export const MAX_IMAGE_BYTES = Math.floor((5 * 1024 * 1024 * 3) / 4);
/** Files larger than this are not edited in memory, and are skipped by grep. */
export const MAX_EDIT_FILE_BYTES = 16 * 1024 * 1024;

const startsWith = (buffer: Uint8Array, signature: number[], at = 0): boolean =>
  signature.every((byte, i) => buffer[at + i] === byte);

/** MIME type of a PNG, JPEG, GIF or WebP image from its first bytes; undefined otherwise. */
export function sniffImageMimeType(head: Uint8Array): string | undefined {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (startsWith(head, [0xff, 0xd8, 0xff])) return "image/jpeg";
  if (startsWith(head, [0x47, 0x49, 0x46, 0x38])) return "image/gif";
  if (startsWith(head, [0x52, 0x49, 0x46, 0x46]) && startsWith(head, [0x57, 0x45, 0x42, 0x50], 8))
    return "image/webp";
  return undefined;
}

/** A file is treated as binary when its first bytes contain a NUL (as git and ripgrep do). */
export function looksBinary(head: Uint8Array): boolean {
  return head.includes(0);
}
