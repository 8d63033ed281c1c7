/**
 * @module How bytes a client asked for (file bodies, script output) travel in a JSON answer:
 * as text only when a model can read them and the answer stays bounded, otherwise as base64.
 */
import { exactText } from '../catalog/read.js';

/**
 * The bytes as text when a model can read them and the answer stays bounded: exact UTF-8 with no
 * control bytes but tab, newline, CR and form feed, whose escaping (JSON text inside a JSON-RPC
 * string: a quote costs 4 bytes on the wire) costs at most twice its size. Otherwise undefined
 * (send base64, which costs 4/3 and is never escaped). Security: without this, 1 MiB of NULs or
 * quotes became 7 or 4 MiB on the wire and cut the client's connection.
 */
export function readableText(bytes: Uint8Array): string | undefined {
  let wire = 0;
  for (const byte of bytes) {
    if (byte === 0x22 || byte === 0x5c) wire += 4;
    else if (byte === 0x09 || byte === 0x0a || byte === 0x0d || byte === 0x0c) wire += 3;
    else if (byte < 0x20 || byte === 0x7f) return undefined;
    else wire += 1;
  }
  return wire > 2 * bytes.length ? undefined : exactText(bytes);
}

/** Like {@link readableText} for a prefix cut from longer bytes: a split last character is dropped. */
export function readablePrefix(bytes: Uint8Array): string | undefined {
  for (let cut = 0; cut <= 3 && cut < bytes.length; cut++) {
    const text = readableText(bytes.subarray(0, bytes.length - cut));
    if (text !== undefined) return text;
  }
  return undefined;
}
