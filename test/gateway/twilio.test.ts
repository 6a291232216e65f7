import { describe, expect, it } from 'vitest';
import { parseTwilioMessage, TwilioStreamState, TwilioTrackClock, twilioSpeakers, type TwilioStart } from '../../src/gateway/twilio.js';

const start = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    event: 'start',
    sequenceNumber: '1',
    start: {
      streamSid: 'MZ1',
      accountSid: 'AC1',
      callSid: 'CA1',
      tracks: ['inbound', 'outbound'],
      customParameters: {},
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      ...extra,
    },
    streamSid: 'MZ1',
  });
const media = (m: Record<string, unknown>) =>
  JSON.stringify({
    event: 'media',
    sequenceNumber: '3',
    media: { track: 'inbound', chunk: '1', timestamp: '5', payload: '//8=', ...m },
    streamSid: 'MZ1',
  });

describe('parseTwilioMessage', () => {
  it('reads the documented messages', () => {
    expect(parseTwilioMessage(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }))).toEqual({
      ok: true,
      message: { event: 'connected', protocol: 'Call', version: '1.0.0' },
    });
    const s = parseTwilioMessage(start({ customParameters: { inboundSpeaker: 'customer', n: 5 } }));
    expect(s).toMatchObject({
      ok: true,
      message: {
        event: 'start',
        callSid: 'CA1',
        streamSid: 'MZ1',
        tracks: ['inbound', 'outbound'],
        customParameters: { inboundSpeaker: 'customer' },
      },
    });
    // The TwiML's agentId parameter is kept; one that no call would take is refused.
    expect(parseTwilioMessage(start({ customParameters: { agentId: 'agent-42' } }))).toMatchObject({
      ok: true,
      message: { customParameters: { agentId: 'agent-42' } },
    });
    expect(parseTwilioMessage(start({ customParameters: { agentId: 'x'.repeat(129) } }))).toMatchObject({ ok: false, reason: 'bad_field' });
    expect(parseTwilioMessage(start({ customParameters: { agentId: '' } }))).toMatchObject({ ok: false, reason: 'bad_field' });
    const m = parseTwilioMessage(media({}));
    expect(m).toMatchObject({ ok: true, message: { event: 'media', track: 'inbound', chunk: 1, timestampMs: 5 } });
    expect(m.ok && m.message.event === 'media' && [...m.message.payload]).toEqual([0xff, 0xff]);
    expect(parseTwilioMessage(JSON.stringify({ event: 'mark', mark: { name: 'x' } }))).toEqual({
      ok: true,
      message: { event: 'mark', name: 'x' },
    });
    expect(parseTwilioMessage(JSON.stringify({ event: 'dtmf', dtmf: { track: 'inbound_track', digit: '1' } }))).toEqual({
      ok: true,
      message: { event: 'dtmf', digit: '1' },
    });
    expect(parseTwilioMessage(JSON.stringify({ event: 'stop', stop: { callSid: 'CA1' } }))).toEqual({
      ok: true,
      message: { event: 'stop' },
    });
  });

  it.each([
    ['not json', 'not_json'],
    ['[]', 'bad_field'],
    [JSON.stringify({ event: 'bogus' }), 'unknown_event'],
    [JSON.stringify({ event: 'start' }), 'bad_field'],
    [start({ callSid: 'CA 1' }), 'bad_field'],
    [start({ tracks: [] }), 'bad_field'],
    [start({ tracks: ['inbound', 'inbound'] }), 'bad_field'],
    [start({ tracks: ['both'] }), 'bad_field'],
    [start({ customParameters: 'x' }), 'bad_field'],
    [start({ mediaFormat: { encoding: 'audio/l16', sampleRate: 16000, channels: 1 } }), 'unsupported_format'],
    [JSON.stringify({ event: 'media' }), 'bad_field'],
    [media({ track: 'sideways' }), 'bad_field'],
    [media({ chunk: '-1' }), 'bad_field'],
    [media({ timestamp: 'soon' }), 'bad_field'],
    [media({ payload: '' }), 'bad_payload'],
    [media({ payload: 'a*b=' }), 'bad_payload'],
    [media({ payload: 'abc' }), 'bad_payload'],
    [media({ payload: Buffer.alloc(90_000).toString('base64') }), 'bad_payload'],
  ])('refuses %s as %s', (text, reason) => {
    expect(parseTwilioMessage(text)).toMatchObject({ ok: false, reason });
  });
});

describe('twilioSpeakers', () => {
  const s = (custom: Record<string, string>): TwilioStart => ({
    event: 'start',
    streamSid: 'MZ',
    accountSid: 'AC',
    callSid: 'CA',
    tracks: ['inbound', 'outbound'],
    customParameters: custom,
  });
  it('defaults to the track names, customParameters override', () => {
    expect(twilioSpeakers(s({}))).toEqual({ ok: true, speakers: { inbound: 'inbound', outbound: 'outbound' } });
    expect(twilioSpeakers(s({ inboundSpeaker: 'customer', outboundSpeaker: 'agent' }))).toEqual({
      ok: true,
      speakers: { inbound: 'customer', outbound: 'agent' },
    });
  });
  it('refuses names outside the pattern and two equal names', () => {
    expect(twilioSpeakers(s({ inboundSpeaker: 'a b' })).ok).toBe(false);
    expect(twilioSpeakers(s({ inboundSpeaker: 'x'.repeat(33) })).ok).toBe(false);
    expect(twilioSpeakers(s({ inboundSpeaker: 'agent', outboundSpeaker: 'agent' })).ok).toBe(false);
  });
});

describe('TwilioStreamState', () => {
  it('takes connected, one start, media of started tracks, stop; refuses the rest', () => {
    const st = new TwilioStreamState();
    const m = (track: 'inbound' | 'outbound') => ({ event: 'media' as const, track, chunk: 1, timestampMs: 0, payload: Buffer.alloc(1) });
    expect(st.check(m('inbound'))).toMatch(/before start/);
    expect(st.check({ event: 'connected', protocol: '', version: '' })).toBeNull();
    const begin: TwilioStart = {
      event: 'start',
      streamSid: 'MZ',
      accountSid: 'AC',
      callSid: 'CA',
      tracks: ['inbound'],
      customParameters: {},
    };
    expect(st.check(begin)).toBeNull();
    st.apply(begin);
    expect(st.check(begin)).toMatch(/second start/);
    expect(st.check(m('inbound'))).toBeNull();
    expect(st.check(m('outbound'))).toMatch(/not in start.tracks/);
    st.apply({ event: 'stop' });
    expect(st.check(m('inbound'))).toMatch(/after stop/);
  });
});

describe('TwilioTrackClock', () => {
  it('fills a timestamp jump with silence, ignores jitter under a frame, bounds a huge jump', () => {
    const c = new TwilioTrackClock();
    expect(c.fillBefore(0)).toBe(0);
    c.place(160, 0);
    expect(c.fillBefore(30)).toBe(0); // 10 ms ahead: stamp jitter
    c.place(160, 0);
    expect(c.fillBefore(140)).toBe(140 * 8 - 320);
    c.place(160, c.fillBefore(140));
    expect(c.placed).toBe(140 * 8 + 160);
    expect(c.fillBefore(3_600_000)).toBe(80_000);
  });
});
