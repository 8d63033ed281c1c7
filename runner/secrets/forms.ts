/**
 * @module The spellings of a secret value that redaction searches for (docs/secrets-redaction.md):
 * the raw bytes, base64 and base64url (the fully determined core at each of the three alignments a
 * value can have inside a longer encoded text), hex in lower and upper case, the URL encodings
 * common clients produce, and for a PEM value the bytes it armours in the same binary spellings.
 * Each is also found with line breaks inside it ({@link LineJoin}). Pure: bytes in, byte patterns out.
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

/**
 * The bytes each PEM-style block in `value` armours (`-----BEGIN X-----`, base64, `-----END X-----`,
 * lines broken by real or escaped `\n` as a `.env` file often holds them; RFC 1421 header lines such
 * as `Proc-Type: ...` left out), when they are at least {@link MIN_REDACTED_BYTES} long. Security:
 * a script holding a PEM key can print its body alone, or its DER bytes, in a spelling of those.
 */
export function pemContents(value: string): Buffer[] {
  const contents: Buffer[] = [];
  for (const block of value.matchAll(/-----BEGIN ([^\r\n-]+)-----([\s\S]*?)-----END \1-----/g)) {
    const lines = block[2]!.split(/\r?\n|\r|\\r\\n|\\n/).filter((line) => !line.includes(':'));
    const body = lines.join('').replace(/[ \t]/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body)) continue;
    const bytes = Buffer.from(body, 'base64');
    if (bytes.length >= MIN_REDACTED_BYTES) contents.push(bytes);
  }
  return contents;
}

/** Adds the binary spellings of `bytes` (base64 and base64url cores, hex) to `spellings`. */
function addEncodings(bytes: Buffer, spellings: Set<string>): void {
  for (const align of [0, 1, 2] as const) {
    const core = base64Core(bytes, align);
    spellings.add(core);
    spellings.add(core.replace(/[+/]/g, (c) => B64URL[c]!));
  }
  const hex = bytes.toString('hex');
  spellings.add(hex);
  spellings.add(hex.toUpperCase());
}

/** Every distinct spelling of `value` searched for, as bytes. */
export function formsOf(value: string): Buffer[] {
  const raw = Buffer.from(value, 'utf8');
  const spellings = new Set<string>();
  addEncodings(raw, spellings);
  // A PEM value's armoured bytes are the key itself: as bytes, and in the same encodings.
  for (const der of pemContents(value)) {
    spellings.add(der.toString('latin1'));
    addEncodings(der, spellings);
  }
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

/** How many spaces or tabs after a line break are indentation, skipped with it. */
const MAX_INDENT = 32;
/** The longest joint: an escaped CRLF (`\r\n` as four characters) and its indentation. */
export const MAX_JOINT = 4 + MAX_INDENT;
const LF = 0x0a;
const CR = 0x0d;
const BACKSLASH = 0x5c;

/**
 * The length of the line break at `at`, or 0: CRLF, LF, CR, and the same escaped as a JSON or C
 * string writes them (`\n`, `\r\n`, `\r` as two or four characters).
 */
function breakLength(b: Uint8Array, at: number): number {
  const c = b[at];
  if (c === CR) return b[at + 1] === LF ? 2 : 1;
  if (c === LF) return 1;
  if (c !== BACKSLASH) return 0;
  const e = b[at + 1];
  if (e === 0x6e) return 2; // \n
  if (e !== 0x72) return 0; // \r
  return b[at + 2] === BACKSLASH && b[at + 3] === 0x6e ? 4 : 2;
}

/** The next byte at or after `from` that can begin a line break (CR, LF or a backslash); -1 when none. */
function nextBreakByte(b: Buffer, from: number, cache: number[]): number {
  let min = -1;
  for (let k = 0; k < 3; k++) {
    if (cache[k] !== -1 && cache[k]! < from) cache[k] = b.indexOf(k === 0 ? LF : k === 1 ? CR : BACKSLASH, from);
    const at = cache[k]!;
    if (at !== -1 && (min === -1 || at < min)) min = at;
  }
  return min;
}

/**
 * A text with its line breaks taken out: {@link text} holds its *real* bytes, and each removed
 * stretch (a *joint*) is one line break — CRLF, LF, CR, or the same escaped in a string — that
 * follows a real byte, with up to 32 spaces or tabs of indentation after it. So base64 wrapped at
 * any width (MIME's 76 columns, PEM's 64, `base64.encodebytes`, coreutils `base64`, `openssl
 * base64`), a hex dump in lines, or a PEM block in a JSON string reads as one run of characters.
 * A second break right after a joint is a real byte (so a joint is at most {@link MAX_JOINT} bytes
 * and the real bytes around it are never more than that apart).
 *
 * Security: a spelling split over lines is still that spelling; searched in {@link text}, an
 * occurrence maps back (through {@link origin}) to the bytes it covers, breaks included.
 */
export class LineJoin {
  /** The real bytes, in order (the input itself when it has no joint). */
  readonly text: Buffer;
  /** Per run of real bytes: its first byte's offset in the input, and in {@link text}. */
  readonly #from: number[];
  readonly #at: number[];
  /** The joints, flat: start, end, start, end, ... (input offsets). */
  readonly #joints: number[];
  readonly #input: Buffer;

  /** `afterReal`: whether the byte before the input was a real one (true at a stream's start). */
  constructor(input: Buffer, afterReal = true) {
    this.#input = input;
    const from: number[] = [];
    const at: number[] = [];
    const joints: number[] = [];
    const cache = [-2, -2, -2];
    let i = 0;
    let runStart = 0;
    let out = 0;
    let prevReal = afterReal;
    for (;;) {
      const c = nextBreakByte(input, i, cache);
      if (c === -1) break;
      if (c > i) prevReal = true;
      const length = prevReal ? breakLength(input, c) : 0;
      if (length === 0) {
        prevReal = true;
        i = c + 1;
        continue;
      }
      let end = c + length;
      const limit = Math.min(input.length, end + MAX_INDENT);
      while (end < limit && (input[end] === 0x20 || input[end] === 0x09)) end++;
      if (c > runStart) {
        from.push(runStart);
        at.push(out);
        out += c - runStart;
      }
      joints.push(c, end);
      runStart = end;
      i = end;
      prevReal = false;
    }
    if (input.length > runStart) {
      from.push(runStart);
      at.push(out);
      out += input.length - runStart;
    }
    this.#from = from;
    this.#at = at;
    this.#joints = joints;
    if (joints.length === 0) this.text = input;
    else {
      const text = Buffer.allocUnsafe(out);
      for (let r = 0; r < from.length; r++) {
        const length = this.#runLength(r, out);
        // A native copy costs more than a short line's bytes copied one by one.
        input.copy(text, at[r], from[r], from[r]! + length);
      }
      this.text = text;
    }
  }

  get joined(): boolean {
    return this.#joints.length > 0;
  }

  #runLength(r: number, total = this.text.length): number {
    return (r + 1 < this.#at.length ? this.#at[r + 1]! : total) - this.#at[r]!;
  }

  /** The last run whose `key` start is at or before `value` (binary search); -1 when none. */
  #run(key: number[], value: number): number {
    let lo = 0;
    let hi = key.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (key[mid]! <= value) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /** The input offset of real byte `k` of {@link text}. */
  origin(k: number): number {
    if (this.#joints.length === 0) return k;
    const r = this.#run(this.#at, k);
    return this.#from[r]! + (k - this.#at[r]!);
  }

  /** How many real bytes stand before input offset `p`. */
  realBefore(p: number): number {
    if (this.#joints.length === 0) return p;
    const r = this.#run(this.#from, p - 1);
    if (r === -1) return 0;
    return this.#at[r]! + Math.min(p - this.#from[r]!, this.#runLength(r));
  }

  /** Whether the byte at input offset `p` is a real one (not in a joint). */
  isReal(p: number): boolean {
    const r = this.#run(this.#from, p);
    return r !== -1 && p < this.#from[r]! + this.#runLength(r);
  }

  /** `p`, or the start of the joint `p` is inside. */
  snap(p: number): number {
    const j = this.#joints;
    for (let lo = 0, hi = j.length / 2 - 1; lo <= hi; ) {
      const mid = (lo + hi) >> 1;
      if (j[2 * mid + 1]! <= p) lo = mid + 1;
      else if (j[2 * mid]! > p) hi = mid - 1;
      else return j[2 * mid]!;
    }
    return p;
  }

  /**
   * Where the input's classification may still change when more bytes follow it: the first byte in
   * the last {@link MAX_JOINT} that can begin a line break (a CR, a backslash, indentation still
   * growing), moved back to the start of a joint it is in; the input's length when there is none.
   */
  unsettledFrom(): number {
    const input = this.#input;
    const tail = Math.max(0, input.length - MAX_JOINT);
    const c = nextBreakByte(input, tail, [-2, -2, -2]);
    return c === -1 ? input.length : this.snap(c);
  }
}

/** The bytes a spelling is searched as in a {@link LineJoin}'s text: its own line breaks taken out the same way. */
export function joinedForm(form: Buffer): Buffer {
  return new LineJoin(form).text;
}

/**
 * Whether a spelling's occurrences are all found in the joined text: it has no byte that can begin a
 * line break and does not start with indentation, so no joint can fall inside or at the start of
 * it. Other spellings (a raw value with a line break in it, a backslash, a leading space) are also
 * searched as they are.
 */
export function joinsPlainly(form: Buffer): boolean {
  return form.indexOf(LF) === -1 && form.indexOf(CR) === -1 && form.indexOf(BACKSLASH) === -1 && form[0] !== 0x20 && form[0] !== 0x09;
}
