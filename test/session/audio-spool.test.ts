import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  AudioSpoolDir,
  crc32,
  decodeSpoolRecords,
  encodeChannelRecord,
  encodeSpoolRecord,
  openSegmentAudio,
  SPOOL_RECORD_HEADER_BYTES,
} from '../../src/session/audio-spool.js';
import { tempDir } from '../helpers/service.js';

const ramp = (n: number, from = 0) => Int16Array.from({ length: n }, (_, i) => (((from + i) * 37) % 30000) - 15000);

describe('spool record codec', () => {
  it('computes the standard CRC-32', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
  });

  it('round-trips records and stops at a torn or corrupted one', () => {
    const a = encodeSpoolRecord(0n, ramp(160));
    const b = encodeSpoolRecord(160n, ramp(80, 160));
    const both = Buffer.concat([a, b]);
    const whole = decodeSpoolRecords(both);
    expect(whole.validBytes).toBe(both.length);
    expect(whole.records.map((r) => [r.startSample, r.samples.length])).toEqual([
      [0n, 160],
      [160n, 80],
    ]);
    expect([...whole.records[1]!.samples]).toEqual([...ramp(80, 160)]);
    // Torn: the second record cut mid-payload.
    expect(decodeSpoolRecords(both.subarray(0, both.length - 3))).toMatchObject({ validBytes: a.length });
    // Corrupted payload byte: CRC catches it.
    const bad = Buffer.from(both);
    bad[a.length + SPOOL_RECORD_HEADER_BYTES + 5]! ^= 0xff;
    expect(decodeSpoolRecords(bad).records).toHaveLength(1);
  });

  it('any prefix of a spool decodes to the records wholly inside it', () => {
    const recs = [encodeSpoolRecord(0n, ramp(10)), encodeSpoolRecord(10n, ramp(7, 10)), encodeSpoolRecord(17n, ramp(3, 17))];
    const all = Buffer.concat(recs);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: all.length }), (cut) => {
        const { records, validBytes } = decodeSpoolRecords(all.subarray(0, cut));
        let ends = 0;
        let n = 0;
        for (const r of recs) {
          if (ends + r.length > cut) break;
          ends += r.length;
          n++;
        }
        expect(records).toHaveLength(n);
        expect(validBytes).toBe(ends);
      }),
    );
  });
});

describe('channel-state records', () => {
  // float32 values (as pocketsphinx's mfcc_t) and a frame count: stored as float64, exact
  const state = [...Float32Array.from([47.34, -28.44, 1.5, 0.1]), 512];

  it('decode beside audio records, the last one wins, and a torn or corrupt one ends the good prefix', () => {
    const older = encodeChannelRecord(state.map((v) => v + 1));
    const newer = encodeChannelRecord(state);
    const audio = encodeSpoolRecord(0n, ramp(40));
    const all = Buffer.concat([older, newer, audio]);
    const whole = decodeSpoolRecords(all);
    expect(whole.channelState).toEqual(state);
    expect(whole.records).toHaveLength(1);
    expect(whole.validBytes).toBe(all.length);
    expect(decodeSpoolRecords(audio).channelState).toBeNull();
    const torn = decodeSpoolRecords(Buffer.concat([older, newer.subarray(0, newer.length - 1)]));
    expect(torn).toMatchObject({ validBytes: older.length, records: [] });
    expect(torn.channelState).not.toEqual(state);
    const bad = Buffer.from(all);
    bad[older.length + 12 + 3]! ^= 0xff;
    expect(decodeSpoolRecords(bad)).toMatchObject({ validBytes: older.length, records: [] });
  });

  it('clear(state) leaves the state as the first record, ahead of later audio', () => {
    const dir = new AudioSpoolDir(tempDir(), -1);
    const spool = dir.open('rts_chan1');
    spool.append(0n, ramp(160));
    spool.clear(state);
    spool.append(160n, ramp(80, 160));
    const read = dir.read('rts_chan1');
    expect(read.channelState).toEqual(state);
    expect(read.records.map((r) => r.startSample)).toEqual([160n]);
    spool.clear();
    expect(dir.read('rts_chan1')).toMatchObject({ records: [], channelState: null });
    spool.remove();
  });
});

describe('openSegmentAudio', () => {
  const records = [
    { startSample: 0n, samples: ramp(100) },
    { startSample: 100n, samples: ramp(50, 100) },
    { startSample: 150n, samples: ramp(50, 150) },
  ];
  it('returns the contiguous audio after the persisted end, cutting inside a record', () => {
    const open = openSegmentAudio(records, 120n)!;
    expect(open.startSample).toBe(120n);
    expect(open.endSample).toBe(200n);
    expect([...open.samples]).toEqual([...ramp(80, 120)]);
  });
  it('is null when everything is persisted', () => {
    expect(openSegmentAudio(records, 200n)).toBeNull();
  });
  it('stops at a discontinuity', () => {
    const open = openSegmentAudio([...records, { startSample: 300n, samples: ramp(10) }], 0n)!;
    expect(open.endSample).toBe(200n);
  });
});

describe('AudioSpool files', () => {
  it('appends, syncs before acks, clears, cuts a torn tail on read, and removes', async () => {
    const dir = new AudioSpoolDir(tempDir(), 5);
    const spool = dir.open('rts_test1');
    spool.append(0n, ramp(160));
    spool.append(160n, ramp(160, 160));
    await spool.whenDurable();
    expect(dir.list()).toEqual(['rts_test1']);
    fs.appendFileSync(dir.fileOf('rts_test1'), Buffer.from([0x53, 0x50, 0x4c]));
    const read = dir.read('rts_test1');
    expect(read.records.map((r) => r.startSample)).toEqual([0n, 160n]);
    expect(read.tornBytes).toBe(3);
    expect(fs.statSync(dir.fileOf('rts_test1')).size).toBe(2 * (SPOOL_RECORD_HEADER_BYTES + 320));
    spool.clear();
    expect(dir.read('rts_test1').records).toHaveLength(0);
    spool.append(320n, ramp(10));
    expect(dir.read('rts_test1').records.map((r) => r.startSample)).toEqual([320n]);
    spool.remove();
    expect(dir.list()).toEqual([]);
  });

  it('one sync covers a batch of acks', async () => {
    const spool = new AudioSpoolDir(tempDir(), 20).open('rts_batch');
    const order: number[] = [];
    spool.append(0n, ramp(10));
    const a = spool.whenDurable().then(() => order.push(1));
    spool.append(10n, ramp(10));
    const b = spool.whenDurable().then(() => order.push(2));
    await Promise.all([a, b]);
    expect(order).toEqual([1, 2]);
    spool.close();
  });

  it('refuses unsafe session ids, and lists only files with safe ones', () => {
    const dir = new AudioSpoolDir(tempDir());
    expect(() => dir.open('../x')).toThrow(RangeError);
    fs.writeFileSync(`${dir.dir}/a b.spool`, 'not ours');
    dir.open('rts_ok').append(0n, ramp(4));
    expect(dir.list()).toEqual(['rts_ok']);
  });

  it('keepFrom keeps the audio from a sample on (cutting inside a record) after the channel state', async () => {
    const dir = new AudioSpoolDir(tempDir(), 5);
    const spool = dir.open('rts_keep');
    spool.append(0n, ramp(100));
    spool.append(100n, ramp(100, 100));
    spool.append(200n, ramp(100, 200));
    const sync = spool.whenDurable(); // a sync in flight on the descriptor keepFrom replaces
    spool.keepFrom(150n, [1, 2, 3]);
    await sync;
    let read = dir.read('rts_keep');
    expect(read.channelState).toEqual([1, 2, 3]);
    expect(read.records.map((r) => [r.startSample, r.samples.length])).toEqual([
      [150n, 50],
      [200n, 100],
    ]);
    expect([...read.records[0]!.samples]).toEqual([...ramp(50, 150)]);
    // appends go to the new file
    spool.append(300n, ramp(10, 300));
    await spool.whenDurable();
    expect(dir.read('rts_keep').records.map((r) => r.startSample)).toEqual([150n, 200n, 300n]);
    // nothing past the point: the spool is emptied to its channel state
    spool.keepFrom(310n, [4]);
    read = dir.read('rts_keep');
    expect(read.records).toEqual([]);
    expect(read.channelState).toEqual([4]);
    expect(fs.readdirSync(dir.dir).sort()).toEqual(['rts_keep.spool']);
    fs.writeFileSync(`${dir.dir}/rts_keep.spool.tmp`, 'a rewrite a crash cut short');
    dir.removeLeftovers();
    expect(fs.readdirSync(dir.dir).sort()).toEqual(['rts_keep.spool']);
    spool.close();
  });

  it("release() closes an idle spool's descriptor; the next append reopens it", () => {
    const dir = new AudioSpoolDir(tempDir(), -1);
    const spool = dir.open('rts_idle');
    spool.append(0n, ramp(10));
    const open = () =>
      fs.readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`) === dir.fileOf('rts_idle');
        } catch {
          return false;
        }
      }).length;
    expect(open()).toBe(1);
    spool.release();
    expect(open()).toBe(0);
    spool.append(10n, ramp(10, 10));
    expect(open()).toBe(1);
    expect(dir.read('rts_idle').records.map((r) => r.startSample)).toEqual([0n, 10n]);
    spool.close();
  });
});
