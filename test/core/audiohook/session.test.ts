import { describe, expect, it } from 'vitest';
import { AudiohookProtocolError, parseClientMessage } from '../../../src/core/audiohook/messages.js';
import { AudiohookSession, selectMedia, splitInterleaved } from '../../../src/core/audiohook/session.js';

const SID = 'e160e428-53e2-487c-977d-96989bf5c99d';
const STEREO = { type: 'audio', format: 'PCMU', channels: ['external', 'internal'], rate: 8000 };
const EXTERNAL = { type: 'audio', format: 'PCMU', channels: ['external'], rate: 8000 };
const INTERNAL = { type: 'audio', format: 'PCMU', channels: ['internal'], rate: 8000 };

function client(s: { seq: number; serverseq: number }, type: string, parameters: Record<string, unknown>, position = 'PT0S'): string {
  s.seq += 1;
  return JSON.stringify({ version: '2', id: SID, type, seq: s.seq, serverseq: s.serverseq, position, parameters });
}

const openParams = (media: unknown[] = [STEREO, EXTERNAL, INTERNAL], extra: Record<string, unknown> = {}) => ({
  organizationId: 'd7934305-0972-4844-938e-9060eef73d05',
  conversationId: '090eaa2f-72fa-480a-83e0-8667ff89c0ec',
  participant: { id: '883efee8-3d6c-4537-b500-6d7ca4b92fa0', ani: '+1-555-555-1234', aniName: 'John Doe', dnis: '+1-800-555-6789' },
  media,
  language: 'en-US',
  ...extra,
});

function opened(media?: unknown[]) {
  const session = new AudiohookSession(SID);
  const c = { seq: 0, serverseq: 0 };
  const out = session.text(client(c, 'open', openParams(media)));
  expect(out.action.kind).toBe('open');
  const msg = session.opened();
  c.serverseq = msg.seq;
  return { session, c, msg };
}

const reason = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof AudiohookProtocolError) return err.reason;
    throw err;
  }
  return 'accepted';
};

describe('AudioHook session protocol', () => {
  it('open and opened: stereo picked when offered, server messages numbered from 1 with clientseq', () => {
    const { msg, session } = opened();
    expect(msg).toEqual({
      version: '2',
      id: SID,
      type: 'opened',
      seq: 1,
      clientseq: 1,
      parameters: { media: [STEREO], startPaused: false },
    });
    expect(session.channels).toEqual(['external', 'internal']);
    expect(selectMedia([EXTERNAL as never, INTERNAL as never])).toEqual(EXTERNAL);
    expect(selectMedia([INTERNAL as never])).toEqual(INTERNAL);
    // L16 taken too, before PCMU for the same channels; stereo first whatever its format.
    const l16 = { ...STEREO, format: 'L16' };
    expect(selectMedia([STEREO as never, l16 as never])).toEqual(l16);
    expect(selectMedia([{ ...EXTERNAL, format: 'L16' } as never, STEREO as never])).toEqual(STEREO);
    expect(selectMedia([{ ...STEREO, format: 'L16', rate: 16000 } as never])).toBeNull();
  });

  it('L16 frames: two bytes a sample, split per channel, the position counted in samples', () => {
    const { session } = opened([{ ...STEREO, format: 'L16' }]);
    // Samples 0x0102 (external) and 0x0304 (internal), little-endian, then 0x0506 and 0x0708.
    const parts = session.audio(Buffer.from([2, 1, 4, 3, 6, 5, 8, 7]));
    expect(parts.map((p) => [...p])).toEqual([
      [2, 1, 6, 5],
      [4, 3, 8, 7],
    ]);
    expect(session.positionUs).toBe(250);
    expect(() => session.audio(Buffer.from([1, 2, 3]))).toThrow(/not a whole number/);
  });

  it('an offer of nothing it takes is a media error', () => {
    const session = new AudiohookSession(SID);
    expect(
      reason(() =>
        session.text(
          client({ seq: 0, serverseq: 0 }, 'open', openParams([{ type: 'audio', format: 'opus', channels: ['external'], rate: 48000 }])),
        ),
      ),
    ).toBe('media');
  });

  it('binary frames split by channel, position counted; ping, paused, resumed, discarded move it', () => {
    const { session, c } = opened();
    const frame = Buffer.alloc(3200);
    for (let i = 0; i < 1600; i++) {
      frame[2 * i] = 1;
      frame[2 * i + 1] = 2;
    }
    const [ext, int] = session.audio(frame);
    expect(ext!.length).toBe(1600);
    expect(ext!.every((b) => b === 1) && int!.every((b) => b === 2)).toBe(true);
    const pong = session.text(client(c, 'ping', {}, 'PT0.2S'));
    expect(pong.replies.map((r) => [r.type, r.seq, r.clientseq])).toEqual([['pong', 2, 2]]);
    expect(session.text(client(c, 'paused', {}, 'PT0.2S')).action.kind).toBe('paused');
    expect(reason(() => session.audio(frame))).toBe('audio');
    const resumed = session.text(client(c, 'resumed', { start: 'PT0.2S', discarded: 'PT1.5S' }, 'PT1.7S'));
    expect(resumed.action).toEqual({ kind: 'gap', samples: 12_000 });
    session.audio(frame);
    const discarded = session.text(client(c, 'discarded', { start: 'PT1.9S', discarded: 'PT0.5S' }, 'PT1.9S'));
    expect(discarded.action).toEqual({ kind: 'gap', samples: 4000 });
    expect(session.positionUs).toBe(2_400_000);
    expect(session.text(client(c, 'close', { reason: 'end' }, 'PT2.4S')).action).toEqual({ kind: 'close', reason: 'end' });
    expect(session.closed()).toMatchObject({ type: 'closed', seq: 3, clientseq: 6 });
  });

  it('out-of-order seq, a serverseq from the future, another session id, a wrong position are protocol errors', () => {
    {
      const { session, c } = opened();
      c.seq += 1; // skips one
      expect(reason(() => session.text(client(c, 'ping', {})))).toBe('seq');
    }
    {
      const { session, c } = opened();
      c.serverseq = 7;
      expect(reason(() => session.text(client(c, 'ping', {})))).toBe('serverseq');
    }
    {
      const { session } = opened();
      expect(
        reason(() =>
          session.text(
            JSON.stringify({
              version: '2',
              id: '00000000-0000-4000-8000-000000000000',
              type: 'ping',
              seq: 2,
              serverseq: 1,
              position: 'PT0S',
              parameters: {},
            }),
          ),
        ),
      ).toBe('session_id');
    }
    {
      const { session, c } = opened();
      session.audio(Buffer.alloc(3200));
      expect(reason(() => session.text(client(c, 'ping', {}, 'PT5S')))).toBe('position');
    }
    {
      const { session, c } = opened();
      expect(reason(() => session.text(client(c, 'discarded', { start: 'PT3S', discarded: 'PT1S' }, 'PT3S')))).toBe('position');
    }
    {
      const { session } = opened();
      expect(reason(() => session.audio(Buffer.alloc(3)))).toBe('audio');
      expect(reason(() => session.audio(Buffer.alloc(64_000)))).toBe('too_large');
    }
  });

  it('a mono session takes its one channel as is', () => {
    const { session } = opened([INTERNAL]);
    const [only] = session.audio(Buffer.from([1, 2, 3]));
    expect([...only!]).toEqual([1, 2, 3]);
    expect([...splitInterleaved(Buffer.from([1, 2, 3, 4]), 2)[1]!]).toEqual([2, 4]);
  });

  it('messages are checked field by field', () => {
    const m = (o: Record<string, unknown>) =>
      JSON.stringify({ version: '2', id: SID, type: 'ping', seq: 1, serverseq: 0, position: 'PT0S', parameters: {}, ...o });
    expect(reason(() => parseClientMessage('{'))).toBe('not_json');
    expect(reason(() => parseClientMessage(m({ version: '1' })))).toBe('malformed');
    expect(reason(() => parseClientMessage(m({ seq: 0 })))).toBe('malformed');
    expect(reason(() => parseClientMessage(m({ position: '3s' })))).toBe('malformed');
    expect(reason(() => parseClientMessage(m({ type: 'dance' })))).toBe('unknown_type');
    expect(reason(() => parseClientMessage(m({ type: 'close', parameters: { reason: 'bored' } })))).toBe('bad_parameters');
    expect(reason(() => parseClientMessage(m({ type: 'discarded', parameters: { start: 'PT1S' } })))).toBe('bad_parameters');
    expect(reason(() => parseClientMessage(m({ type: 'open', parameters: { ...openParams(), conversationId: 'x' } })))).toBe(
      'bad_parameters',
    );
    expect(
      reason(() => parseClientMessage(m({ type: 'open', parameters: openParams([{ ...STEREO, channels: ['external', 'external'] }]) }))),
    ).toBe('bad_parameters');
    expect(
      reason(() => parseClientMessage(m({ type: 'open', parameters: openParams(undefined, { continuedSessions: [{ id: SID }] }) }))),
    ).toBe('bad_parameters');
    expect(reason(() => parseClientMessage(m({ parameters: { pad: 'x'.repeat(70_000) } })))).toBe('too_large');
    const open = parseClientMessage(
      m({ type: 'open', parameters: openParams(undefined, { continuedSessions: [{ id: SID, serverseq: 4, clientseq: 9 }] }) }),
    );
    expect(open.type === 'open' && open.parameters.continuedSessions).toEqual([{ id: SID, serverseq: 4, clientseq: 9 }]);
  });

  it('disconnect moves to DISCONNECTING: no audio, a close is still answered', () => {
    const { session, c } = opened();
    expect(session.disconnect('error', 'x')).toMatchObject({ type: 'disconnect', parameters: { reason: 'error', info: 'x' } });
    expect(reason(() => session.audio(Buffer.alloc(2)))).toBe('audio');
    expect(session.text(client(c, 'close', { reason: 'error' })).action.kind).toBe('close');
  });
});

describe('after a disconnect for a broken sequence', () => {
  it("the client's close is taken whatever its seq, and answered with closed", () => {
    const { session, c } = opened();
    c.seq += 3;
    expect(reason(() => session.text(client(c, 'ping', {})))).toBe('seq');
    session.disconnect('error', 'Invalid seq');
    expect(session.text(client(c, 'close', { reason: 'disconnect' })).action).toEqual({ kind: 'close', reason: 'disconnect' });
    expect(session.closed().type).toBe('closed');
  });
});
