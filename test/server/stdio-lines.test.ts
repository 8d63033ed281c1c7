/**
 * The stdio line reader and the id scanner it uses for lines over the cap: what an oversized or
 * hostile line can make the front keep, and which id its error answer carries.
 */
import { describe, expect, test } from 'vitest';
import { LineReader } from '../../server/stdio/lines.js';
import { MAX_ID_BYTES, TopLevelIdScanner } from '../../server/stdio/top-level-id.js';

function idOf(text: string, chunk = 7): string | number | null | undefined {
  const scanner = new TopLevelIdScanner();
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += chunk) scanner.feed(bytes.subarray(i, i + chunk));
  return scanner.id();
}

describe('top-level id of a line too long to keep', () => {
  test('finds the id the SDK client writes after params, at the end of the line', () => {
    expect(idOf(JSON.stringify({ method: 'tools/call', params: { arguments: { a: 'x'.repeat(5000) } }, jsonrpc: '2.0', id: 42 }))).toBe(42);
    expect(idOf(JSON.stringify({ jsonrpc: '2.0', id: 'abc-1', method: 'm' }))).toBe('abc-1');
    expect(idOf('{ "id" : null , "method":"m"}')).toBeNull();
  });

  test('an "id" key nested in params, or inside a string, is not the message id (no answer under a forged id)', () => {
    expect(idOf(JSON.stringify({ method: 'm', params: { id: 666, deeper: [{ id: 667 }] }, id: 5 }))).toBe(5);
    expect(idOf(JSON.stringify({ method: 'm', params: { text: '","id":666,"x":"' } }))).toBeUndefined();
    expect(idOf(JSON.stringify({ method: 'm', params: { text: 'a\\"id\\":9 \u00e9\u{1f600}' }, id: 'ü' }))).toBe('ü');
  });

  test('a notification has no id; neither has an array, a scalar or broken JSON', () => {
    expect(idOf(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: {} }))).toBeUndefined();
    expect(idOf('[{"id":1}]')).toBeUndefined();
    expect(idOf('"id"')).toBeUndefined();
    expect(idOf('{"id" 1}')).toBeUndefined();
  });

  test('an object, array or over-long id is no usable id (the scanner keeps at most MAX_ID_BYTES of it)', () => {
    expect(idOf('{"id":{"a":1},"method":"m"}')).toBeUndefined();
    expect(idOf('{"id":[1],"method":"m"}')).toBeUndefined();
    expect(idOf(JSON.stringify({ method: 'm', id: 'z'.repeat(MAX_ID_BYTES + 1) }))).toBeUndefined();
  });

  test('with duplicate id keys the last one wins, as JSON.parse would', () => {
    expect(idOf('{"id":1,"method":"m","id":2}')).toBe(2);
  });
});

describe('line reader with a cap', () => {
  test('splits lines across chunks and strips a CR', () => {
    const reader = new LineReader(100);
    expect(reader.push(Buffer.from('{"a":1}\r\n{"b"'))).toEqual([{ line: '{"a":1}' }]);
    expect(reader.push(Buffer.from(':2}\n'))).toEqual([{ line: '{"b":2}' }]);
    expect(reader.end()).toEqual([]);
  });

  test('a line over the cap is reported with its size and id, never returned, and the next line is read normally', () => {
    const reader = new LineReader(64);
    const big = JSON.stringify({ method: 'm', params: { pad: 'p'.repeat(1000) }, id: 9 });
    const events = [...reader.push(Buffer.from(big.slice(0, 500))), ...reader.push(Buffer.from(`${big.slice(500)}\n{"id":10}\n`))];
    expect(events).toEqual([{ oversized: { bytes: big.length, id: 9 } }, { line: '{"id":10}' }]);
  });

  test('a last line without a newline at end of input is still returned', () => {
    const reader = new LineReader(64);
    expect(reader.push(Buffer.from('{"id":1}'))).toEqual([]);
    expect(reader.end()).toEqual([{ line: '{"id":1}' }]);
  });
});
