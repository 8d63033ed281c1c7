/**
 * @module Results whose JSON the server already holds. A `skills/list` page is made of catalog
 * entries that never change once built (catalog/source.ts keeps each entry's JSON beside its
 * check), so its JSON can be joined from those pieces instead of stringified again for every page:
 * a 30-skill page is 77 KB, and stringifying it and encoding the string as UTF-8 were ~45 % of the
 * stdio front's CPU on a warm walk (bench/RESULTS.md, issue 31 item 3).
 *
 * A handler registers its result with {@link withJson}; the stdio transport asks {@link jsonOf}
 * for the bytes when it writes the answer. The bytes are made only then (a result the SDK replaces
 * on its way out, as the 2026 era's result stamping does, is never encoded), and they must be
 * exactly `JSON.stringify(result)`: test/server/pre-encoded.test.ts checks every page shape.
 */

/** Makes the JSON of the result it was registered for, with `more` members after its own. */
export type Encoder = (more: Readonly<Record<string, unknown>>) => Buffer[];

const encoders = new WeakMap<object, Encoder>();

const NO_MORE: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * Registers `encode` as the way to `result`'s JSON, and freezes `result` (its own members; what it
 * holds is frozen by whoever built it, or, for catalog entries, never changed by design) so the
 * bytes cannot come to differ from the object they stand for.
 */
export function withJson<T extends object>(result: T, encode: Encoder): T {
  encoders.set(Object.freeze(result), encode);
  return result;
}

/**
 * The JSON of `value` if it was registered with {@link withJson} (in pieces, to be sent one after
 * the other), else undefined. With `more`: `JSON.stringify({ ...value, ...more })`, for members
 * `value` does not have (the caller's to make sure: a repeated member would be written twice).
 */
export function jsonOf(value: unknown, more: Readonly<Record<string, unknown>> = NO_MORE): Buffer[] | undefined {
  return typeof value === 'object' && value !== null ? encoders.get(value)?.(more) : undefined;
}

/**
 * `JSON.stringify(message) + trailer` for a JSON-RPC answer whose `result` has its JSON already,
 * as pieces of bytes to send in order (never copied into one); undefined when it has none. The members keep the message's own order, as
 * `JSON.stringify` would.
 */
export function encodeAnswer(message: object, trailer = ''): Buffer[] | undefined {
  const result = (message as { result?: unknown }).result;
  const json = jsonOf(result);
  if (json === undefined) return undefined;
  const parts: Buffer[] = [];
  let sep = '{';
  for (const [key, value] of Object.entries(message)) {
    // As JSON.stringify: a member whose value has no JSON is left out.
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue;
    if (key === 'result') {
      parts.push(Buffer.from(`${sep}"result":`), ...json);
    } else {
      parts.push(Buffer.from(`${sep}${JSON.stringify(key)}:${JSON.stringify(value)}`));
    }
    sep = ',';
  }
  parts.push(Buffer.from(`${sep === '{' ? '{}' : '}'}${trailer}`));
  return parts;
}
