/**
 * Redaction, the second wall (runner/secrets/redact.ts, forms.ts): a value a run could see must not
 * come back in any spelling a stock library makes, wherever the stream's chunks happen to split it,
 * and an output cap must not let its first bytes through. Pure: no processes here (the run path is
 * covered by test/e2e/skill-run-redaction.test.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { base64Core, formsOf, LineJoin, MAX_JOINT, MIN_REDACTED_BYTES, pemContents } from '../../runner/secrets/forms.js';
import { Redactor, RunRedaction } from '../../runner/secrets/redact.js';

const KEY = 'sk-live-4fG7pQ2xZ9vR1mT8';
const SPECIAL = "p@ss w/rd+x!'()*~é=&?#%";

/** Pushes `input` in the given chunk sizes (cycling) and ends the stream. */
function run(redaction: RunRedaction, input: Buffer, sizes: number[] = [input.length], cut = false): { out: Buffer; heldBack: number } {
  const r = redaction.stream()!;
  const out: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < input.length; i++) {
    const size = Math.max(1, sizes[i % sizes.length]!);
    out.push(...r.push(input.subarray(at, at + size)));
    at += size;
  }
  out.push(...r.end(cut));
  return { out: Buffer.concat(out), heldBack: r.heldBack };
}

const redactText = (
  values: { name: string; value: string }[],
  text: string,
): { text: string; summary: ReturnType<RunRedaction['summary']> } => {
  const redaction = new RunRedaction(values);
  return { text: run(redaction, Buffer.from(text)).out.toString('utf8'), summary: redaction.summary() };
};

/** Every spelling a script could print `value` in with one library call, each at some offset of a longer text. */
function spellings(value: string): Record<string, string> {
  const raw = Buffer.from(value);
  const b64 = (prefix: string): string => Buffer.concat([Buffer.from(prefix), raw, Buffer.from('tail')]).toString('base64');
  const b64url = (prefix: string): string => Buffer.concat([Buffer.from(prefix), raw, Buffer.from('!?')]).toString('base64url');
  return {
    raw: value,
    'base64 alone': raw.toString('base64'),
    'base64 at alignment 0': b64('abc'),
    'base64 at alignment 1': b64('a'),
    'base64 at alignment 2': b64('ab'),
    'base64url alone': raw.toString('base64url'),
    'base64url at alignment 1': b64url('x'),
    'base64url at alignment 2': b64url('xy'),
    'hex lower': raw.toString('hex'),
    'hex upper': raw.toString('hex').toUpperCase(),
    encodeURIComponent: encodeURIComponent(value),
    'form + for space': encodeURIComponent(value).replace(/%20/g, '+'),
    URLSearchParams: new URLSearchParams({ v: value }).toString().slice(2),
    'RFC 3986 strict (curl, quote(safe=""))': encodeURIComponent(value).replace(
      /[!'()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    ),
  };
}

describe('the spellings searched (forms.ts)', () => {
  it('a base64 core is the part of the encoding fixed by the value alone, at every alignment', () => {
    const value = Buffer.from(KEY);
    for (const align of [0, 1, 2] as const) {
      const core = base64Core(value, align);
      for (const fill of ['\0\0\0', 'xyz', '\xff\xfe\xfd']) {
        const around = Buffer.concat([Buffer.from(fill.slice(0, align), 'latin1'), value, Buffer.from(fill, 'latin1')]).toString('base64');
        expect(around).toContain(core);
      }
      // Nearly the whole value: at most two characters lost at each end.
      expect(core.length).toBeGreaterThanOrEqual(Math.floor((value.length * 8) / 6) - 2);
    }
  });

  it('a value of plain token characters has few distinct spellings (no duplicates searched)', () => {
    const forms = formsOf(KEY).map((f) => f.toString('latin1'));
    expect(new Set(forms).size).toBe(forms.length);
    expect(forms).toContain(KEY);
  });
});

describe('every spelling is redacted', () => {
  for (const value of [KEY, SPECIAL]) {
    for (const [form, text] of Object.entries(spellings(value))) {
      it(`${form} of ${JSON.stringify(value)}`, () => {
        const got = redactText([{ name: 'API_KEY', value }], `before ${text} after`);
        expect(got.text).toContain('[secret:API_KEY]');
        expect(got.text.startsWith('before ')).toBe(true);
        expect(got.text.endsWith(' after')).toBe(true);
        // Nothing of the determined spelling survives: no run of 8 of its characters is left.
        const left = got.text.replace(/\[secret:API_KEY\]/g, '\u0000');
        for (const f of formsOf(value)) expect(left).not.toContain(f.toString('latin1').slice(2, 10));
        expect(got.summary.count).toBeGreaterThanOrEqual(1);
        expect(got.summary.names.map((n) => n.name)).toEqual(['API_KEY']);
      });
    }
  }

  it('text without a value passes through byte for byte and counts nothing', () => {
    const got = redactText([{ name: 'API_KEY', value: KEY }], 'nothing secret here, sk-live- alone is only a prefix');
    expect(got.text).toBe('nothing secret here, sk-live- alone is only a prefix');
    expect(got.summary).toEqual({ count: 0, names: [] });
  });
});

/** `text` wrapped at `width` columns with `eol`, as line-wrapping encoders write it. */
const wrap = (text: string, width: number, eol = '\n'): string => (text.match(new RegExp(`.{1,${width}}`, 'g')) ?? []).join(eol) + eol;

describe('attack: an encoding wrapped into lines (LF, CRLF, any width)', () => {
  // A legacy env secret long enough that every wrap width below breaks its spellings.
  const LONG = 'sk-live-9QmV2xL7pR4tZ8wK3nB6yH1cJ5dF0gS2aE7uT4iO9pXq-3vN8mW1zR6tY0uI4oP7aS2dF5gH9jK3lZ6xC8vB1nM4qW7eR0';
  const value = Buffer.from(LONG);
  const wrapped: Record<string, string> = {
    'base64.encodebytes (76 columns, LF)': wrap(value.toString('base64'), 76),
    'coreutils base64 (76 columns, LF)': wrap(Buffer.concat([Buffer.from('prefix:'), value]).toString('base64'), 76),
    'openssl base64 (64 columns, LF)': wrap(Buffer.concat([Buffer.from('ab'), value]).toString('base64'), 64),
    'MIME (76 columns, CRLF)': wrap(Buffer.concat([Buffer.from('a'), value]).toString('base64'), 76, '\r\n'),
    'base64 at 16 columns, CR': wrap(value.toString('base64'), 16, '\r'),
    'base64url at 20 columns': wrap(value.toString('base64url'), 20),
    'hex at 60 columns (xxd -p)': wrap(value.toString('hex'), 60),
    'hex upper at 32 columns, CRLF': wrap(value.toString('hex').toUpperCase(), 32, '\r\n'),
    'base64 in a JSON string with escaped \\n every 10': wrap(value.toString('base64'), 10, '\\n'),
    'base64 wrapped and indented (YAML block)': wrap(value.toString('base64'), 20, '\n    '),
    'raw value broken over two lines': `${LONG.slice(0, 20)}\n${LONG.slice(20)}`,
  };
  for (const [how, text] of Object.entries(wrapped)) {
    it(`${how}: no line keeps a piece of the value (old: redacted 0)`, () => {
      const got = redactText([{ name: 'LEGACY', value: LONG }], `before\n${text}after`);
      expect(got.text).toContain('[secret:LEGACY]');
      expect(got.summary.count).toBeGreaterThanOrEqual(1);
      expect(got.text.startsWith('before\n')).toBe(true);
      expect(got.text.endsWith('after')).toBe(true);
      // No 8 characters of any spelling survive, even read across the lines.
      const left = got.text.replace(/\[secret:LEGACY\]/g, '\u0000').replace(/\r|\n|\\n|\\r| /g, '');
      for (const f of formsOf(LONG).map((b) => b.toString('latin1')))
        for (let i = 2; i + 10 <= f.length; i++) expect(left, JSON.stringify(got.text)).not.toContain(f.slice(i, i + 8));
    });
  }

  it('at every split position of a wrapped spelling, and one byte at a time', () => {
    const redaction = new RunRedaction([{ name: 'K', value: LONG }]);
    const text = Buffer.from(`<<\n${wrap(value.toString('base64'), 76, '\r\n')}>>`);
    const once = run(redaction, text).out.toString();
    expect(once).toMatch(/^<<\r?\n?[^\n]{0,2}\[secret:K\]/);
    for (let split = 0; split <= text.length; split++) expect(run(redaction, text, [split, text.length]).out.toString()).toBe(once);
    expect(run(redaction, text, [1]).out.toString()).toBe(once);
  });

  it('random wrapping of random text with values inside gives the one-shot result at any chunking', () => {
    const values = [
      { name: 'A', value: LONG },
      { name: 'B', value: randomBytes(40).toString('base64') },
    ];
    const redaction = new RunRedaction(values);
    const eols = ['\n', '\r\n', '\r', '\\n', '\\r\\n', '\n  '];
    const parts: string[] = [];
    for (let i = 0; i < 40; i++) {
      parts.push(randomBytes(Math.floor(Math.random() * 200)).toString('base64'));
      const v = values[i % 2]!;
      const spelled = [Buffer.from(v.value).toString('base64'), Buffer.from(v.value).toString('hex'), v.value][i % 3]!;
      parts.push(wrap(spelled, 3 + Math.floor(Math.random() * 80), eols[i % eols.length]));
    }
    const input = Buffer.from(parts.join('\n'));
    const once = run(redaction, input).out;
    expect(redaction.summary().count).toBeGreaterThanOrEqual(40);
    for (let trial = 0; trial < 10; trial++) {
      const sizes = Array.from({ length: 7 }, () => 1 + Math.floor(Math.random() * 300));
      expect(run(redaction, input, sizes).out.equals(once)).toBe(true);
    }
  });

  it('line breaks and their indentation between real bytes are joints; a second break right after one is a real byte', () => {
    const j = new LineJoin(Buffer.from('ab\r\n  cd\n\nef\\r\\ngh\\x'));
    expect(j.text.toString()).toBe('abcd\nefgh\\x');
    expect(j.origin(2)).toBe(6);
    expect(j.realBefore(6)).toBe(2);
    expect(j.isReal(3)).toBe(false);
    expect(j.snap(4)).toBe(2);
  });
});

describe('attack: PEM-style blocks', () => {
  const der = randomBytes(600);
  const body = der.toString('base64');
  const pem = `-----BEGIN PRIVATE KEY-----\n${wrap(body, 64)}-----END PRIVATE KEY-----\n`;

  it('a PEM value printed as it is, with CRLF, rewrapped at 76, or in a JSON string, is redacted', () => {
    const spelled = {
      'as it is': pem,
      CRLF: pem.replace(/\n/g, '\r\n'),
      'rewrapped at 76': `-----BEGIN PRIVATE KEY-----\n${wrap(body, 76)}-----END PRIVATE KEY-----\n`,
      'JSON string': JSON.stringify({ key: pem }),
    };
    for (const [how, text] of Object.entries(spelled)) {
      const got = redactText([{ name: 'PEM', value: pem }], `key: ${text} done`);
      expect(got.text, how).toContain('[secret:PEM]');
      // No 16 characters of the body survive on any line.
      for (let i = 0; i + 16 <= body.length; i += 16)
        expect(got.text.replace(/\r|\n|\\n|\\r/g, ''), how).not.toContain(body.slice(i, i + 16));
    }
  });

  it("the body alone, the DER bytes raw, in hex or in another wrapping of base64, are the key's too", () => {
    expect(pemContents(pem)).toEqual([der]);
    // A .env file's spelling: the lines joined by an escaped \n.
    expect(pemContents(pem.replace(/\n/g, '\\n'))).toEqual([der]);
    for (const text of [
      wrap(body, 76),
      der.toString('hex'),
      wrap(der.toString('hex'), 60),
      Buffer.concat([Buffer.from('x'), der]).toString('base64'),
    ]) {
      const got = redactText([{ name: 'PEM', value: pem }], `>${text}<`);
      expect(got.text).toContain('[secret:PEM]');
      expect(got.text.length).toBeLessThan(40);
    }
    const binary = run(new RunRedaction([{ name: 'PEM', value: pem }]), Buffer.concat([Buffer.from('bin:'), der, Buffer.from(':end')])).out;
    expect(binary.toString('latin1')).toBe('bin:[secret:PEM]:end');
  });

  it('a PEM block whose body is not base64 (or too short) adds nothing', () => {
    expect(pemContents('-----BEGIN X-----\nnot base64!\n-----END X-----')).toEqual([]);
    expect(pemContents('-----BEGIN X-----\nAAAA\n-----END X-----')).toEqual([]);
    expect(pemContents('-----BEGIN X-----\nAAAAAAAAAAAA\n-----END Y-----')).toEqual([]);
  });
});

describe('attack: a value split across chunks', () => {
  it('is redacted at every split position of every spelling', () => {
    const redaction = new RunRedaction([{ name: 'K', value: KEY }]);
    for (const form of formsOf(KEY)) {
      const input = Buffer.concat([Buffer.from('<<'), form, Buffer.from('>>')]);
      for (let split = 0; split <= input.length; split++) {
        expect(run(redaction, input, [split, input.length]).out.toString('latin1')).toBe('<<[secret:K]>>');
      }
    }
  });

  it('is redacted when every chunk is one byte long', () => {
    const redaction = new RunRedaction([{ name: 'K', value: KEY }]);
    expect(run(redaction, Buffer.from(`a${KEY}b${KEY}`), [1]).out.toString()).toBe('a[secret:K]b[secret:K]');
  });

  it('random chunkings of random binary data with values inside give exactly the one-shot result', () => {
    const values = [
      { name: 'A', value: KEY },
      { name: 'B', value: randomBytes(24).toString('base64') },
      { name: 'C', value: SPECIAL },
    ];
    const redaction = new RunRedaction(values);
    const parts: Buffer[] = [];
    for (let i = 0; i < 60; i++) {
      parts.push(randomBytes(Math.floor(Math.random() * 300)));
      const v = values[i % 3]!;
      parts.push(formsOf(v.value)[i % formsOf(v.value).length]!);
    }
    const input = Buffer.concat(parts);
    const once = run(redaction, input).out;
    for (let trial = 0; trial < 20; trial++) {
      const sizes = Array.from({ length: 7 }, () => 1 + Math.floor(Math.random() * 200));
      expect(run(redaction, input, sizes).out.equals(once)).toBe(true);
    }
    for (const f of values.flatMap((v) => formsOf(v.value))) expect(once.includes(f)).toBe(false);
  });
});

describe('many values, overlaps and edges', () => {
  it('several values in one text are each named and counted', () => {
    const values = ['ALPHA_TOKEN_123', 'bravo-secret-456', 'charlie/789+xyz='].map((value, i) => ({ name: `S${i}`, value }));
    const text = `${values[0]!.value} ${Buffer.from(values[1]!.value).toString('hex')} ${values[2]!.value} ${values[0]!.value}`;
    const got = redactText(values, text);
    expect(got.text).toBe('[secret:S0] [secret:S1] [secret:S2] [secret:S0]');
    expect(got.summary).toEqual({
      count: 4,
      names: [
        { name: 'S0', count: 2 },
        { name: 'S1', count: 1 },
        { name: 'S2', count: 1 },
      ],
    });
  });

  it('a value inside a longer one: the longer one wins and only it is named', () => {
    const got = redactText(
      [
        { name: 'SHORT', value: 'inner-secret' },
        { name: 'LONG', value: 'outer-inner-secret-outer' },
      ],
      '[outer-inner-secret-outer]',
    );
    expect(got.text).toBe('[[secret:LONG]]');
    expect(got.summary.names).toEqual([{ name: 'LONG', count: 1 }]);
  });

  it('two values that overlap: no byte of either survives; the stretch names both, in order', () => {
    const got = redactText(
      [
        { name: 'A', value: 'aaaa-bbbb-cccc' },
        { name: 'B', value: 'cccc-dddd-eeee' },
      ],
      '>aaaa-bbbb-cccc-dddd-eeee<',
    );
    expect(got.text).toBe('>[secret:A][secret:B]<');
  });

  it('a value repeated back to back is one stretch and one marker; a self-overlapping value leaves nothing', () => {
    expect(redactText([{ name: 'K', value: KEY }], `${KEY}${KEY}${KEY}`).text).toBe('[secret:K]');
    expect(redactText([{ name: 'P', value: 'abababab' }], 'xababababababy').text).toBe('x[secret:P]y');
  });

  it('a value at the very end (and at the very start) of the stream', () => {
    expect(redactText([{ name: 'K', value: KEY }], `end: ${KEY}`).text).toBe('end: [secret:K]');
    expect(redactText([{ name: 'K', value: KEY }], KEY).text).toBe('[secret:K]');
    const prefix = KEY.slice(0, -1);
    // An unfinished value at the end of a stream that ended normally is not the value: it is passed on.
    expect(redactText([{ name: 'K', value: KEY }], `end: ${prefix}`).text).toBe(`end: ${prefix}`);
  });

  it(`values under ${MIN_REDACTED_BYTES} bytes are not searched, and the summary names them`, () => {
    const got = redactText(
      [
        { name: 'PIN', value: '1234' },
        { name: 'K', value: KEY },
      ],
      `1234 ${KEY}`,
    );
    expect(got.text).toBe('1234 [secret:K]');
    expect(got.summary).toEqual({ count: 1, names: [{ name: 'K', count: 1 }], notSearched: ['PIN'] });
    const none = new RunRedaction([{ name: 'PIN', value: '1234' }]);
    expect(none.stream()).toBeUndefined();
    expect(none.reported).toBe(true);
    expect(none.summary()).toEqual({ count: 0, names: [], notSearched: ['PIN'] });
  });

  it('text helpers redact short run-chosen strings (a destination, a file name)', () => {
    const redaction = new RunRedaction([{ name: 'K', value: KEY }]);
    expect(redaction.text(`${Buffer.from(KEY).toString('hex')}.evil.example:443`)).toBe('[secret:K].evil.example:443');
    expect(redaction.text('plain.example:443')).toBe('plain.example:443');
  });
});

describe('streamed, with a bounded carry', () => {
  it('bytes are passed on as soon as no value can still begin in them (without line breaks, the carry is longest spelling − 1)', () => {
    const redaction = new RunRedaction([{ name: 'K', value: KEY }]);
    const longest = Math.max(...formsOf(KEY).map((f) => f.length));
    const r = redaction.stream()!;
    let passed = 0;
    // Random bytes with no byte that can begin a line break (CR, LF, backslash).
    const noBreaks = (b: Buffer): Buffer => b.map((x) => (x === 0x0a || x === 0x0d || x === 0x5c ? 0x2e : x)) as Buffer;
    for (let i = 0; i < 64; i++) passed += Buffer.concat(r.push(noBreaks(randomBytes(64 * 1024)))).length;
    expect(passed).toBe(64 * 64 * 1024 - (longest - 1));
    expect(Buffer.concat(r.end()).length).toBe(longest - 1);
  });

  it('with a line break after every byte (the longest joint each time) the carry stays bounded: (longest − 1) real bytes and their joints', () => {
    const redaction = new RunRedaction([{ name: 'K', value: KEY }]);
    const longest = Math.max(...formsOf(KEY).map((f) => f.length));
    const bound = (longest - 1) * (1 + MAX_JOINT) + 2 * MAX_JOINT;
    for (const joint of ['\n', '\r\n', '\\r\\n', `\\r\\n${' '.repeat(32)}`, '\n\n']) {
      const r = redaction.stream()!;
      const chunk = Buffer.from(`x${joint}`.repeat(Math.ceil((64 * 1024) / (1 + joint.length))));
      let pushed = 0;
      let passed = 0;
      for (let i = 0; i < 16; i++) {
        pushed += chunk.length;
        passed += Buffer.concat(r.push(chunk)).length;
        expect(pushed - passed, JSON.stringify(joint)).toBeLessThanOrEqual(bound);
      }
      expect(passed + Buffer.concat(r.end()).length).toBe(pushed);
    }
  });

  it('a long stretch of one value repeated does not grow the carry', () => {
    const redaction = new RunRedaction([{ name: 'P', value: 'abababab' }]);
    const r = redaction.stream()!;
    const out: Buffer[] = [];
    for (let i = 0; i < 100; i++) out.push(...r.push(Buffer.from('ab'.repeat(5000))));
    out.push(...r.end());
    expect(Buffer.concat(out).toString()).toBe('[secret:P]');
  });
});

describe('attack: a value straddling the output cap', () => {
  const redaction = new RunRedaction([{ name: 'K', value: KEY }]);
  const keep = Math.max(...formsOf(KEY).map((f) => f.length)) - 1;

  it('no prefix of the value is passed on when the stream is cut inside it', () => {
    for (let inside = 1; inside < KEY.length; inside++) {
      const kept = Buffer.from(`${'x'.repeat(100)}${KEY.slice(0, inside)}`);
      const { out, heldBack } = run(redaction, kept, [37], true);
      expect(out.toString()).toBe('x'.repeat(100 + inside - keep));
      expect(heldBack).toBe(keep);
    }
  });

  it('what is held back at a cut does not depend on whether it began a value (no guessing oracle)', () => {
    const guess = run(redaction, Buffer.from(`${'x'.repeat(100)}${KEY.slice(0, 10)}`), [64], true);
    const other = run(redaction, Buffer.from(`${'x'.repeat(100)}${'q'.repeat(10)}`), [64], true);
    expect([guess.out.length, guess.heldBack]).toEqual([other.out.length, other.heldBack]);
  });

  it('a whole value just before the cut is still a marker, never dropped silently', () => {
    const { out, heldBack } = run(redaction, Buffer.from(`${'x'.repeat(100)}${KEY}`), [50], true);
    expect(out.toString()).toBe(`${'x'.repeat(100 - (keep - KEY.length))}[secret:K]`);
    expect(heldBack).toBe(keep - KEY.length);
    expect(redaction.summary().count).toBeGreaterThan(0);
  });
});

describe('a Redactor knows nothing but its patterns', () => {
  it('an empty pattern list is never built (RunRedaction gives no redactor)', () => {
    expect(new RunRedaction([]).stream()).toBeUndefined();
    expect(new RunRedaction([]).reported).toBe(false);
  });

  it('its output is deterministic for a given input (hash of the same stream twice)', () => {
    const r1 = new Redactor([{ bytes: Buffer.from('needle-needle'), name: 'N' }], 12, () => undefined);
    const r2 = new Redactor([{ bytes: Buffer.from('needle-needle'), name: 'N' }], 12, () => undefined);
    const input = Buffer.from('hay needle-needle hay');
    const h = (r: Redactor): string =>
      createHash('sha256')
        .update(Buffer.concat([...r.push(input), ...r.end()]))
        .digest('hex');
    expect(h(r1)).toBe(h(r2));
  });
});
