// Text encodings of readTextFile and writeTextFile. Decoding takes every
// label TextDecoder knows; encoding, the ones Node's Buffer writes.
import { SandgateError } from '../errors.js';

const BUFFER_ENCODINGS: Record<string, BufferEncoding> = {
  'utf-8': 'utf8',
  utf8: 'utf8',
  'utf-16le': 'utf16le',
  utf16le: 'utf16le',
  'ucs-2': 'utf16le',
  ucs2: 'utf16le',
  latin1: 'latin1',
  'iso-8859-1': 'latin1',
  ascii: 'ascii',
  'us-ascii': 'ascii',
};

/** The bytes of `text` in `encoding` (default UTF-8). */
export function encodeText(text: string, encoding = 'utf-8'): Uint8Array {
  const enc = BUFFER_ENCODINGS[encoding.toLowerCase()];
  if (!enc) {
    throw new SandgateError(400, 'unsupported_encoding', `Cannot encode text as ${encoding}: one of ${Object.keys(BUFFER_ENCODINGS).join(', ')}`);
  }
  if (enc === 'utf8') return new TextEncoder().encode(text);
  const b = Buffer.from(text, enc);
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/** A decoder of `encoding` (default UTF-8); an unknown label is a SandgateError. */
export function textDecoder(encoding = 'utf-8') {
  try {
    return new TextDecoder(encoding);
  } catch (e) {
    throw new SandgateError(400, 'unsupported_encoding', `Cannot decode text as ${encoding}: ${(e as Error).message}`, undefined, { cause: e });
  }
}
