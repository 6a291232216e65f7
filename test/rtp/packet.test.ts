import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { encodeRtcpBye, encodeRtpPacket, looksLikeRtcp, parseRtcpCompound, parseRtpPacket } from '../../src/rtp/packet.js';

const payload = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]);

describe('parseRtpPacket', () => {
  it('reads every fixed header field', () => {
    const bytes = encodeRtpPacket({
      payloadType: 8,
      sequenceNumber: 0xfffe,
      timestamp: 0xfffffff0,
      ssrc: 0xdeadbeef,
      marker: true,
      payload,
    });
    const r = parseRtpPacket(bytes);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value).toMatchObject({
      marker: true,
      payloadType: 8,
      sequenceNumber: 0xfffe,
      timestamp: 0xfffffff0,
      ssrc: 0xdeadbeef,
      csrcs: [],
      extension: null,
      paddingBytes: 0,
    });
    expect([...r.value.payload]).toEqual([...payload]);
  });

  it('skips CSRCs, the header extension and padding to find the payload', () => {
    const bytes = encodeRtpPacket({
      payloadType: 0,
      sequenceNumber: 7,
      timestamp: 160,
      ssrc: 1,
      csrcs: [11, 22, 33],
      extension: { profile: 0xbede, data: Uint8Array.from([9, 9, 9, 9, 8, 8, 8, 8]) },
      paddingBytes: 3,
      payload,
    });
    const r = parseRtpPacket(bytes);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.csrcs).toEqual([11, 22, 33]);
    expect(r.value.extension?.profile).toBe(0xbede);
    expect([...r.value.extension!.data]).toEqual([9, 9, 9, 9, 8, 8, 8, 8]);
    expect(r.value.paddingBytes).toBe(3);
    expect([...r.value.payload]).toEqual([...payload]);
  });

  it('reads a packet that sits inside a larger buffer (a view, as dgram may give)', () => {
    const inner = encodeRtpPacket({ payloadType: 0, sequenceNumber: 513, timestamp: 1, ssrc: 2, payload });
    const outer = Buffer.concat([Buffer.from([0xaa, 0xbb, 0xcc]), inner]);
    const r = parseRtpPacket(outer.subarray(3));
    expect(r.ok && r.value.sequenceNumber).toBe(513);
  });

  it('accepts an empty payload (keepalive)', () => {
    const r = parseRtpPacket(encodeRtpPacket({ payloadType: 0, sequenceNumber: 1, timestamp: 1, ssrc: 1, payload: new Uint8Array(0) }));
    expect(r.ok && r.value.payload.length).toBe(0);
  });

  const good = encodeRtpPacket({ payloadType: 0, sequenceNumber: 1, timestamp: 1, ssrc: 1, payload });
  const cases: Array<[string, Uint8Array, string]> = [
    ['shorter than the fixed header', good.subarray(0, 11), 'too_short'],
    ['version 1', Buffer.from([0x40, ...good.subarray(1)]), 'bad_version'],
    ['version 0 (e.g. STUN)', Buffer.from([0x00, ...good.subarray(1)]), 'bad_version'],
    ['15 CSRCs announced, none present', Buffer.from([0x8f, ...good.subarray(1)]), 'csrc_overrun'],
    ['extension bit without an extension header', Buffer.from([0x90, ...good.subarray(1, 12), 0xbe]), 'extension_overrun'],
    [
      'extension longer than the packet',
      Buffer.from([0x90, ...good.subarray(1, 12), 0xbe, 0xde, 0x00, 0x09, 1, 2, 3, 4]),
      'extension_overrun',
    ],
    ['padding count of zero', Buffer.from([0xa0, ...good.subarray(1, good.length - 1), 0]), 'bad_padding'],
    ['padding longer than the payload', Buffer.from([0xa0, ...good.subarray(1, good.length - 1), 200]), 'bad_padding'],
    ['an RTCP sender report', Buffer.from([0x80, 200, 0, 6, ...new Array(24).fill(0)]), 'rtcp_not_rtp'],
  ];
  for (const [name, bytes, reason] of cases) {
    it(`rejects ${name} as ${reason}`, () => {
      expect(parseRtpPacket(bytes)).toEqual({ ok: false, reason });
    });
  }

  it('never throws, whatever the bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
        const r = parseRtpPacket(bytes);
        if (r.ok) expect(r.value.payload.length).toBeLessThanOrEqual(bytes.length - 12);
      }),
      { numRuns: 5000 },
    );
  });

  it('round-trips any header through encode and parse', () => {
    fc.assert(
      fc.property(
        fc.record({
          payloadType: fc.integer({ min: 0, max: 127 }).filter((pt) => pt < 64 || pt > 95),
          sequenceNumber: fc.integer({ min: 0, max: 0xffff }),
          timestamp: fc.integer({ min: 0, max: 0xffffffff }),
          ssrc: fc.integer({ min: 0, max: 0xffffffff }),
          marker: fc.boolean(),
          csrcs: fc.array(fc.integer({ min: 0, max: 0xffffffff }), { maxLength: 15 }),
          paddingBytes: fc.integer({ min: 0, max: 20 }),
          payload: fc.uint8Array({ maxLength: 40 }),
        }),
        (fields) => {
          const r = parseRtpPacket(encodeRtpPacket(fields));
          expect(r.ok).toBe(true);
          if (!r.ok) return;
          const { payload: sentPayload, ...sentHeader } = fields;
          const { payload: readPayload, ...readHeader } = r.value;
          expect(readHeader).toMatchObject(sentHeader);
          expect([...readPayload]).toEqual([...sentPayload]);
        },
      ),
    );
  });
});

describe('RTCP', () => {
  it('tells RTCP from RTP by the packet type byte', () => {
    expect(looksLikeRtcp(encodeRtcpBye([1]))).toBe(true);
    expect(looksLikeRtcp(encodeRtpPacket({ payloadType: 0, marker: true, sequenceNumber: 1, timestamp: 1, ssrc: 1, payload }))).toBe(false);
    expect(looksLikeRtcp(encodeRtpPacket({ payloadType: 8, marker: true, sequenceNumber: 1, timestamp: 1, ssrc: 1, payload }))).toBe(false);
  });

  it('finds the BYE in a compound SR + SDES + BYE packet', () => {
    const sr = Buffer.alloc(28);
    sr[0] = 0x80;
    sr[1] = 200;
    sr.writeUInt16BE(6, 2);
    const sdes = Buffer.from([0x81, 202, 0, 2, 0, 0, 0, 7, 1, 1, 0x41, 0]);
    const r = parseRtcpCompound(Buffer.concat([sr, sdes, encodeRtcpBye([7, 0xffffffff])]));
    expect(r).toEqual({ ok: true, value: { byeSsrcs: [7, 0xffffffff], packetTypes: [200, 202, 203] } });
  });

  it('rejects a part whose length runs past the datagram', () => {
    const bye = encodeRtcpBye([7]);
    bye.writeUInt16BE(9, 2);
    expect(parseRtcpCompound(bye)).toEqual({ ok: false, reason: 'too_short' });
  });

  it('rejects a BYE that announces more sources than it holds', () => {
    const bye = encodeRtcpBye([7]);
    bye[0] = 0x80 | 3;
    expect(parseRtcpCompound(bye)).toEqual({ ok: false, reason: 'csrc_overrun' });
  });

  it('never throws, whatever the bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => void parseRtcpCompound(bytes)),
      { numRuns: 5000 },
    );
  });
});
