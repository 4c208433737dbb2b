/** What an `invalid` log keeps of a body that came from the internet: its first 4 KiB. */
export const INVALID_PAYLOAD_EXCERPT_BYTES = 4096;

/** At most the first `maxBytes` of a text's UTF-8, cut before a character that would not fit whole. */
export function utf8Prefix(s: string, maxBytes: number): string {
  // Each UTF-16 unit takes at most 3 bytes: a text this short fits without encoding it.
  if (s.length * 3 <= maxBytes) return s;
  const bytes = Buffer.from(s, 'utf8');
  if (bytes.length <= maxBytes) return s;
  let end = maxBytes;
  // bytes[end] is the first byte left out: while it continues a character, that character is cut.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
