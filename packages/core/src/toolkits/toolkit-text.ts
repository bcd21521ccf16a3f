import { createHash } from 'node:crypto';

/** The bytes of one toolkit file as UTF-8 text, with the hash that decides whether it changed. */
export type ToolkitText = { text: string; hash: string } | { problem: string; hash: string };

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Byte-order marks of the encodings a text editor may save in but toolkit files do not accept. */
const FOREIGN_BOMS: Array<[string, number[]]> = [
  ['UTF-32 LE', [0xff, 0xfe, 0x00, 0x00]],
  ['UTF-32 BE', [0x00, 0x00, 0xfe, 0xff]],
  ['UTF-16 LE', [0xff, 0xfe]],
  ['UTF-16 BE', [0xfe, 0xff]],
];

/**
 * Decodes a toolkit file: UTF-8, with or without a byte-order mark (for JSON as for YAML). UTF-16/32 and
 * other encodings are refused with a message that says so, rather than as a puzzling parse error.
 */
export function decodeToolkitFile(bytes: Buffer): ToolkitText {
  const hash = createHash('sha256').update(bytes).digest('hex');
  const foreign = FOREIGN_BOMS.find(([, bom]) => bom.every((byte, index) => bytes[index] === byte));
  if (foreign) return { problem: `is encoded as ${foreign[0]}; save it as UTF-8`, hash };
  const body = bytes.subarray(0, 3).equals(UTF8_BOM) ? bytes.subarray(3) : bytes;
  // Without a mark, UTF-16/32 text of ASCII characters shows as NUL bytes between the letters.
  if (body.includes(0)) return { problem: 'contains NUL bytes: it looks like UTF-16 or UTF-32; save it as UTF-8', hash };
  try {
    return { text: utf8.decode(body), hash };
  } catch {
    return { problem: 'is not valid UTF-8; save it as UTF-8', hash };
  }
}
