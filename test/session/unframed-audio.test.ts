// Audio from clients that send no epoch or offset (src/session/unframed-audio.ts): numbered
// from the session's cursor, cut to the payload limit, a partial sample carried, and dropped
// without moving the cursor while the session does not accept audio.
import { describe, expect, it } from 'vitest';
import { UnframedAudio } from '../../src/session/unframed-audio.js';
import type { SessionDriver } from '../../src/session/session-driver.js';

function fakeDriver(maxFramePayloadBytes: number) {
  const frames: Array<{ epoch: number; sampleOffset: number; bytes: number }> = [];
  const driver = {
    session: { cursor: { epoch: 3, epochReceived: 100 }, maxFramePayloadBytes },
    audio: (f: { epoch: number; sampleOffset: number; payload: Buffer }) => {
      frames.push({ epoch: f.epoch, sampleOffset: f.sampleOffset, bytes: f.payload.length });
      return Promise.resolve();
    },
  } as unknown as SessionDriver;
  return { driver, frames };
}

describe('UnframedAudio', () => {
  it('numbers whole samples from the cursor, cut to the payload limit, carrying a partial sample', () => {
    const { driver, frames } = fakeDriver(5);
    const input = new UnframedAudio(driver, 2);
    input.push(Buffer.alloc(9));
    input.push(Buffer.alloc(3));
    expect(frames).toEqual([
      { epoch: 3, sampleOffset: 100, bytes: 4 },
      { epoch: 3, sampleOffset: 102, bytes: 4 },
      { epoch: 3, sampleOffset: 104, bytes: 4 },
    ]);
  });

  it('drops audio while not accepting, without moving the cursor', () => {
    const { driver, frames } = fakeDriver(320);
    const input = new UnframedAudio(driver, 1);
    input.accepting = false;
    input.push(Buffer.alloc(160));
    input.accepting = true;
    input.push(Buffer.alloc(160));
    expect(frames).toEqual([{ epoch: 3, sampleOffset: 100, bytes: 160 }]);
  });
});
