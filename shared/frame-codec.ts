/**
 * @module The frame codec alone (shared/frame.ts has the caps the runner's socket uses): a 4-byte
 * big-endian length, then exactly one msgpack value (msgpackr, records off). The length is checked
 * against the cap before a single body byte is buffered, so a hostile header (say 4 GiB) costs
 * nothing. A frame whose body does not decode is refused on its own; the stream stays in step
 * because its length was honest. No schema here, so the small bundles (the outputs walker) can use it.
 */
import { Packr, Unpackr } from 'msgpackr';
import { SkillMcpError } from './errors.js';

const HEADER_BYTES = 4;

/** One decoded frame, or why it was refused. `fatal` means the stream cannot be trusted any more. */
export type FrameEvent = { ok: true; value: unknown } | { ok: false; error: SkillMcpError; fatal: boolean };

/** Encodes and decodes frames with a fixed body cap. One codec per connection; no shared state. */
export class FrameCodec {
  private readonly packr = new Packr({ useRecords: false, variableMapSize: true });
  private readonly unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });
  private chunks: Buffer[] = [];
  private buffered = 0;
  private failed = false;

  constructor(private readonly maxBodyBytes: number) {}

  /** One frame holding `value`. Throws FRAME_TOO_LARGE rather than send what the peer must refuse. */
  encode(value: unknown): Buffer {
    const body = this.packr.pack(value);
    if (body.length > this.maxBodyBytes) {
      throw new SkillMcpError('FRAME_TOO_LARGE', `the message is ${body.length} bytes, over the ${this.maxBodyBytes}-byte frame limit`);
    }
    const header = Buffer.alloc(HEADER_BYTES);
    header.writeUInt32BE(body.length, 0);
    return Buffer.concat([header, body]);
  }

  /** Feeds received bytes; returns every frame they complete, in order. */
  push(chunk: Buffer): FrameEvent[] {
    if (this.failed) return [];
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const events: FrameEvent[] = [];
    for (;;) {
      if (this.buffered < HEADER_BYTES) break;
      const head = this.peek(HEADER_BYTES);
      const length = head.readUInt32BE(0);
      // Security: refuse an oversized frame from its header alone, before buffering its body.
      if (length > this.maxBodyBytes) {
        this.fail();
        events.push({
          ok: false,
          fatal: true,
          error: new SkillMcpError('FRAME_TOO_LARGE', `a frame announced ${length} bytes; the limit is ${this.maxBodyBytes}`),
        });
        break;
      }
      if (this.buffered < HEADER_BYTES + length) break;
      const frame = this.take(HEADER_BYTES + length).subarray(HEADER_BYTES);
      events.push(this.decode(frame));
    }
    return events;
  }

  private decode(body: Buffer): FrameEvent {
    if (body.length === 0) return { ok: false, fatal: false, error: new SkillMcpError('BAD_FRAME', 'an empty frame holds no message') };
    try {
      return { ok: true, value: this.unpackr.unpack(body) };
    } catch (error) {
      // Security: malformed bytes, unknown extensions and very deep nesting (RangeError) all end
      // here; the frame is refused but its honest length keeps the stream in step.
      return {
        ok: false,
        fatal: false,
        error: new SkillMcpError('BAD_FRAME', 'the frame is not one well-formed msgpack value', { cause: error }),
      };
    }
  }

  private fail(): void {
    this.failed = true;
    this.chunks = [];
    this.buffered = 0;
  }

  private peek(bytes: number): Buffer {
    if (this.chunks[0]!.length < bytes) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, bytes);
  }

  private take(bytes: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const out = all.subarray(0, bytes);
    const rest = all.subarray(bytes);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return out;
  }
}
