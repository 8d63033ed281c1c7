import { describe, expect, it } from 'vitest';
import { FrameCodec, MAX_REQUEST_FRAME_BYTES } from '../../shared/frame.js';

function header(length: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(length, 0);
  return b;
}

describe('frame codec', () => {
  it('round-trips a value, also when the bytes arrive one at a time', () => {
    const codec = new FrameCodec(1024);
    const frame = codec.encode({ type: 'describe', list: [1, 'two'] });
    const reader = new FrameCodec(1024);
    const events = [...frame].flatMap((byte) => reader.push(Buffer.from([byte])));
    expect(events).toEqual([{ ok: true, value: { type: 'describe', list: [1, 'two'] } }]);
  });

  it('refuses a 4 GiB length header from the header alone, without buffering (fatal)', () => {
    const codec = new FrameCodec(MAX_REQUEST_FRAME_BYTES);
    const [event] = codec.push(header(0xffffffff));
    expect(event).toMatchObject({ ok: false, fatal: true, error: { code: 'FRAME_TOO_LARGE' } });
    // The stream is dead: later bytes are ignored, never accumulated.
    expect(codec.push(Buffer.alloc(1024))).toEqual([]);
  });

  it('refuses garbage bodies as BAD_FRAME and keeps the stream in step', () => {
    const codec = new FrameCodec(1024);
    const garbage = Buffer.from([0xc1, 0xff, 0x00]);
    const good = new FrameCodec(1024).encode({ type: 'cancel' });
    const events = codec.push(Buffer.concat([header(garbage.length), garbage, good]));
    expect(events[0]).toMatchObject({ ok: false, fatal: false, error: { code: 'BAD_FRAME' } });
    expect(events[1]).toEqual({ ok: true, value: { type: 'cancel' } });
  });

  it('refuses trailing bytes after the msgpack value (one value per frame)', () => {
    const codec = new FrameCodec(1024);
    const body = Buffer.from([0x01, 0x02]);
    expect(codec.push(Buffer.concat([header(2), body]))[0]).toMatchObject({ ok: false, error: { code: 'BAD_FRAME' } });
  });

  it('catches a 100k-deep msgpack value (RangeError) as BAD_FRAME', () => {
    const depth = 100_000;
    const body = Buffer.alloc(depth + 1, 0x91);
    body[depth] = 0xc0;
    const codec = new FrameCodec(MAX_REQUEST_FRAME_BYTES);
    const [event] = codec.push(Buffer.concat([header(body.length), body]));
    expect(event).toMatchObject({ ok: false, fatal: false, error: { code: 'BAD_FRAME' } });
  });

  it('refuses an empty frame', () => {
    expect(new FrameCodec(1024).push(header(0))[0]).toMatchObject({ ok: false, error: { code: 'BAD_FRAME' } });
  });

  it('will not encode a message over the cap', () => {
    expect(() => new FrameCodec(16).encode({ big: 'x'.repeat(100) })).toThrow(/frame limit/);
  });

  it('does not let __proto__ keys pollute objects', () => {
    const codec = new FrameCodec(1024);
    // fixmap(1) { "__proto__": { "polluted": true } }
    const body = Buffer.concat([
      Buffer.from([0x81, 0xa9]),
      Buffer.from('__proto__'),
      Buffer.from([0x81, 0xa8]),
      Buffer.from('polluted'),
      Buffer.from([0xc3]),
    ]);
    const [event] = codec.push(Buffer.concat([header(body.length), body]));
    expect(event?.ok).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.getPrototypeOf((event as { value: object }).value)).toBe(Object.prototype);
  });
});
