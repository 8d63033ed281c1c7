/**
 * @module The spellings of a secret value that redaction searches for (docs/secrets-redaction.md):
 * the raw bytes, base64 and base64url (the fully determined core at each of the three alignments a
 * value can have inside a longer encoded text), hex in lower and upper case, and the URL encodings
 * common clients produce. Pure: bytes in, distinct byte patterns out.
 *
 * Security: a script that holds a value can print it in any of these spellings to dodge a search for
 * the raw bytes alone; each spelling here is one a stock library call produces (`btoa`,
 * `base64.b64encode`, `Buffer#toString('hex')`, `encodeURIComponent`, `urllib.parse.quote_plus`,
 * `URLSearchParams`, `curl --data-urlencode`). A spelling the script makes up itself is not caught.
 */

/** Values shorter than this are not searched (the result names them): see {@link searchable}. */
export const MIN_REDACTED_BYTES = 8;

/**
 * Whether a value is searched for at all. Security: a value under 8 bytes is guessable, so its
 * redaction would be an oracle (print every candidate, see which one is replaced), and its
 * spellings would match ordinary text everywhere; such a value is named as not searched instead.
 */
export function searchable(value: string): boolean {
  return Buffer.byteLength(value) >= MIN_REDACTED_BYTES;
}

const B64URL: Record<string, string> = { '+': '-', '/': '_' };

/**
 * The base64 characters fully determined by `value` alone when it starts `align` bytes (0, 1, 2)
 * after a 3-byte group boundary of a longer encoded text. Characters whose 6 bits straddle the
 * value's first or last byte depend on the neighbours and are left out, so the core matches
 * wherever the value sits, padded or not.
 */
export function base64Core(value: Uint8Array, align: 0 | 1 | 2): string {
  const bits = { from: 8 * align, to: 8 * align + 8 * value.length };
  // Zero bytes stand in for the unknown neighbours; only characters inside `bits` are kept.
  const text = Buffer.concat([Buffer.alloc(align), value, Buffer.alloc(2)]).toString('base64');
  return text.slice(Math.ceil(bits.from / 6), Math.floor(bits.to / 6));
}

/** RFC 3986 unreserved characters only (curl --data-urlencode, Python `quote(safe='')`). */
function percentStrict(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** `application/x-www-form-urlencoded` as the WHATWG URL standard makes it (`URLSearchParams`). */
function formWhatwg(text: string): string {
  return new URLSearchParams({ v: text }).toString().slice(2);
}

/** Every distinct spelling of `value` searched for, as bytes. */
export function formsOf(value: string): Buffer[] {
  const raw = Buffer.from(value, 'utf8');
  const spellings = new Set<string>();
  const cores = ([0, 1, 2] as const).map((align) => base64Core(raw, align));
  for (const core of cores) {
    spellings.add(core);
    spellings.add(core.replace(/[+/]/g, (c) => B64URL[c]!));
  }
  const hex = raw.toString('hex');
  spellings.add(hex);
  spellings.add(hex.toUpperCase());
  const component = encodeURIComponent(value);
  const strict = percentStrict(value);
  for (const url of [component, component.replace(/%20/g, '+'), strict, strict.replace(/%20/g, '+'), formWhatwg(value)]) spellings.add(url);
  const forms = [raw];
  for (const spelling of spellings) {
    const bytes = Buffer.from(spelling, 'latin1');
    if (bytes.length > 0 && !forms.some((f) => f.equals(bytes))) forms.push(bytes);
  }
  return forms;
}
