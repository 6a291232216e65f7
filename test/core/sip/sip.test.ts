// The SIPREC cores: SIP messages (compact headers, folding, Content-Length, bounds, TCP
// framing), multipart bodies in either order, the SDP offer and answer, the metadata of each
// dialect (fixtures written for these tests in the vendors' published shapes), the binding of
// streams to participants by label, and the transaction rules.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  SipParseError,
  SipStreamFramer,
  header,
  headerParam,
  parseSipMessage,
  writeResponse,
  type SipRequest,
} from '../../../src/core/sip/message.js';
import { siprecBody } from '../../../src/core/sip/body.js';
import { parseOffer, writeAnswer } from '../../../src/core/sip/sdp.js';
import { parseMetadata, readCiscoParticipants } from '../../../src/core/sip/metadata.js';
import { SipRefusal, agentRuleFrom, bindStreams, checkCodecs } from '../../../src/core/sip/binding.js';
import { ResponseCache, inDialogAnswer, okRetransmitDelays, transactionKey } from '../../../src/core/sip/transactions.js';
import { checkSiprecSettings, parsePortRange } from '../../../src/core/sip/settings.js';
import { callTitle } from '../../../src/core/sip/answers.js';

const FIXTURES = path.resolve(import.meta.dirname, '../../fixtures/siprec');
const fixture = (name: string) => fs.readFileSync(path.join(FIXTURES, name), 'utf8');
const crlf = (lines: string[]) => lines.join('\r\n');

const SDP = crlf([
  'v=0',
  'o=SBC 1 1 IN IP4 192.0.2.10',
  's=SIPREC',
  'c=IN IP4 192.0.2.10',
  't=0 0',
  'm=audio 40000 RTP/AVP 0 8 101',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:101 telephone-event/8000',
  'a=label:10',
  'a=sendonly',
  'm=audio 40002 RTP/AVP 8 101',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:101 telephone-event/8000',
  'a=label:20',
  'a=sendonly',
  '',
]);

function invite(body: string, contentType: string, extra: string[] = []): Buffer {
  return Buffer.from(
    crlf([
      'INVITE sip:srs@198.51.100.5 SIP/2.0',
      'v: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK-abc;rport',
      'f: <sip:src@192.0.2.10>;tag=src1',
      't: <sip:srs@198.51.100.5>',
      'i: call-1@192.0.2.10',
      'CSeq: 1 INVITE',
      'm: <sip:src@192.0.2.10:5060>',
      'Subject: recording',
      '  session',
      ...extra,
      `c: ${contentType}`,
      `l: ${Buffer.byteLength(body)}`,
      '',
      body,
    ]),
  );
}

function multipart(parts: Array<[string, string]>, boundary = 'OSS-unique-boundary-42'): string {
  return (
    parts
      .map(
        ([type, body]) =>
          `--${boundary}\r\nContent-Type: ${type}\r\n${type.includes('rs-metadata') ? 'Content-Disposition: recording-session\r\n' : ''}\r\n${body}\r\n`,
      )
      .join('') + `--${boundary}--\r\n`
  );
}

describe('SIP messages', () => {
  it('parses a request with compact headers and a folded line, and answers it with our tag', () => {
    const m = parseSipMessage(invite(SDP, 'application/sdp')) as SipRequest;
    expect(m.kind).toBe('request');
    expect(m.method).toBe('INVITE');
    expect(header(m, 'call-id')).toBe('call-1@192.0.2.10');
    expect(header(m, 'subject')).toBe('recording session');
    expect(m.body.toString()).toBe(SDP);
    const res = parseSipMessage(writeResponse(m, 200, { toTag: 'srs9', body: 'x', headers: [['content-type', 'application/sdp']] }));
    expect(res).toMatchObject({ kind: 'response', status: 200, reason: 'OK' });
    expect(headerParam(header(res, 'to')!, 'tag')).toBe('srs9');
    expect(header(res, 'via')).toBe('SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK-abc;rport');
    expect(header(res, 'content-length')).toBe('1');
  });

  it('refuses malformed messages with 400 and bodies over the limit with 413 (with the headers to answer)', () => {
    expect(() => parseSipMessage(Buffer.from('HELLO\r\n\r\n'))).toThrow(SipParseError);
    const noCallId = Buffer.from(
      crlf([
        'OPTIONS sip:x SIP/2.0',
        'Via: SIP/2.0/UDP h;branch=z9hG4bK1',
        'From: <sip:a@b>;tag=1',
        'To: <sip:x>',
        'CSeq: 1 OPTIONS',
        '',
        '',
      ]),
    );
    const e = (() => {
      try {
        parseSipMessage(noCallId);
      } catch (err) {
        return err as SipParseError;
      }
    })();
    expect(e?.status).toBe(400);
    expect(e?.partial?.method).toBe('OPTIONS');
    const big = invite('x'.repeat(70_000), 'application/sdp');
    expect(() => parseSipMessage(big)).toThrow(expect.objectContaining({ status: 413 }));
    const short = Buffer.from(
      invite(SDP, 'application/sdp')
        .toString()
        .replace(`l: ${SDP.length}`, `l: ${SDP.length + 50}`),
    );
    expect(() => parseSipMessage(short)).toThrow(expect.objectContaining({ status: 400 }));
    const badCseq = Buffer.from(invite(SDP, 'application/sdp').toString().replace('CSeq: 1 INVITE', 'CSeq: 1 BYE'));
    expect(() => parseSipMessage(badCseq)).toThrow(/CSeq/);
  });

  it('frames TCP streams by Content-Length, across chunks, keep-alives skipped', () => {
    const framer = new SipStreamFramer();
    const a = invite(SDP, 'application/sdp');
    const all = Buffer.concat([Buffer.from('\r\n\r\n'), a, a]);
    const out = [...framer.push(all.subarray(0, 100)), ...framer.push(all.subarray(100, 700)), ...framer.push(all.subarray(700))];
    expect(out).toHaveLength(2);
    expect((parseSipMessage(out[1]!) as SipRequest).body.toString()).toBe(SDP);
    expect(() => new SipStreamFramer().push(Buffer.from('OPTIONS sip:x SIP/2.0\r\nVia: x\r\n\r\n'))).toThrow(/Content-Length/);
    expect(() => new SipStreamFramer(1024).push(invite('y'.repeat(2000), 'application/sdp'))).toThrow(
      expect.objectContaining({ status: 413 }),
    );
  });
});

describe('SIPREC bodies', () => {
  it('finds SDP and metadata in multipart bodies in either order, with either metadata type', () => {
    const xml = fixture('rfc7865.xml');
    for (const parts of [
      [
        ['application/sdp', SDP],
        ['application/rs-metadata+xml', xml],
      ],
      [
        ['application/rs-metadata', xml],
        ['application/sdp', SDP],
      ],
    ] as Array<Array<[string, string]>>) {
      const body = siprecBody(Buffer.from(multipart(parts)), 'multipart/mixed;boundary="OSS-unique-boundary-42"');
      expect(body.sdp).toBe(SDP);
      expect(body.metadata).toBe(xml);
    }
    expect(siprecBody(Buffer.from(SDP), 'application/sdp')).toEqual({ sdp: SDP, metadata: null });
    expect(() => siprecBody(Buffer.from('x'), 'multipart/mixed')).toThrow(/boundary/);
    expect(() => siprecBody(Buffer.from('x'), 'text/html')).toThrow(/unsupported body type/);
  });
});

describe('SDP offer and answer', () => {
  it('reads labels, codecs, telephone-event and direction; answers recvonly with one codec per stream', () => {
    const offer = parseOffer(SDP);
    expect(offer.streams.map((s) => [s.label, s.codec, s.telephoneEvent, s.direction, s.port])).toEqual([
      ['10', { name: 'PCMU', payloadType: 0 }, 101, 'sendonly', 40000],
      ['20', { name: 'PCMA', payloadType: 8 }, 101, 'sendonly', 40002],
    ]);
    const answer = parseOffer(
      writeAnswer({
        address: '198.51.100.5',
        sessionId: '1',
        version: 1,
        streams: offer.streams.map((stream, i) => ({ stream, port: 30000 + 2 * i })),
      }),
    );
    expect(answer.streams.map((s) => [s.label, s.codec?.name, s.direction, s.port, s.address])).toEqual([
      ['10', 'PCMU', 'recvonly', 30000, '198.51.100.5'],
      ['20', 'PCMA', 'recvonly', 30002, '198.51.100.5'],
    ]);
  });

  it('refuses a stream with no supported codec, and SRTP, with 488', () => {
    const g729 = parseOffer(
      SDP.replace('m=audio 40002 RTP/AVP 8 101', 'm=audio 40002 RTP/AVP 18').replace(
        'a=rtpmap:8 PCMA/8000\r\na=rtpmap:101 telephone-event/8000\r\na=label:20',
        'a=rtpmap:18 G729/8000\r\na=label:20',
      ),
    );
    expect(() => checkCodecs(g729.streams)).toThrow(
      expect.objectContaining({ status: 488, message: expect.stringMatching(/no supported codec.*G729/) }),
    );
    const srtp = parseOffer(SDP.replace('RTP/AVP 0 8 101', 'RTP/SAVP 0 8 101'));
    expect(() => checkCodecs(srtp.streams)).toThrow(/SRTP/);
  });
});

describe('recording metadata dialects', () => {
  it('RFC 7865: participants, stream labels and participantstreamassoc', () => {
    const m = parseMetadata(fixture('rfc7865.xml'));
    expect(m.dialect).toBe('rfc7865');
    expect(m.sessionId).toBe('ZmFrZXNlc3Npb24tcmZjNzg2NQ==');
    expect(m.sipSessionId).toMatch(/^3fa1c2d4/);
    expect(m.participants).toEqual([
      { id: 'cGFydGljaXBhbnQtYWxpY2U=', aor: 'sip:alice@customer.example.net', name: 'Alice Caller', sends: ['c3RyZWFtLXR3bw=='] },
      { id: 'cGFydGljaXBhbnQtYWdlbnQ=', aor: 'sip:agent-2001@cc.example.com', name: 'Agent 2001', sends: ['c3RyZWFtLW9uZQ=='] },
    ]);
    expect(m.streams).toEqual([
      { id: 'c3RyZWFtLW9uZQ==', label: '10' },
      { id: 'c3RyZWFtLXR3bw==', label: '20' },
    ]);
  });

  it('the draft namespace (Oracle/Acme): id attributes, send inside participant, camel-case tags', () => {
    const m = parseMetadata(fixture('draft.xml'));
    expect(m.dialect).toBe('draft');
    expect(m.sessionId).toBe('b3JhY2xlLXNlc3Npb24tMQ==');
    expect(m.participants.map((p) => [p.aor, p.name, p.sends])).toEqual([
      ['sip:+15551230001@sbc.example.org', null, ['cy0x']],
      ['sip:4002@pbx.example.org', 'Desk 4002', ['cy0y']],
    ]);
    expect(m.streams.map((s) => s.label)).toEqual(['1', '2']);
  });

  it('BroadWorks: its namespace with extension data ignored', () => {
    const m = parseMetadata(fixture('broadworks.xml'));
    expect(m.dialect).toBe('broadworks');
    expect(m.participants.map((p) => [p.aor, p.sends])).toEqual([
      ['tel:+15557654321', ['YnctcxAx']],
      ['sip:agent.jones@bw.example.com', ['YnctcxAy']],
    ]);
  });

  it('Cisco CUBE: participants from X-Cisco-Recording-Participant headers, streams by m-line index', () => {
    const m = readCiscoParticipants(
      ['"Caller" <sip:+15550001111@10.1.1.1>;media-index="0"', '<sip:7001@10.1.1.2>;media-index="1"'],
      'cube-1',
    )!;
    expect(m.dialect).toBe('cisco');
    expect(m.participants.map((p) => [p.aor, p.name, p.sends])).toEqual([
      ['sip:+15550001111@10.1.1.1', 'Caller', ['m0']],
      ['sip:7001@10.1.1.2', null, ['m1']],
    ]);
    const offer = parseOffer(SDP);
    const bound = bindStreams(offer.streams, m, agentRuleFrom('^sip:7\\d{3}@'), new Map(), new Set());
    expect(bound.map((b) => [b.key, b.speaker])).toEqual([
      ['10', 'customer'],
      ['20', 'agent'],
    ]);
  });

  it('refuses XML in no known namespace, and unreadable XML', () => {
    expect(() => parseMetadata('<recording xmlns="urn:example"/>')).toThrow(/namespace/);
    expect(() => parseMetadata('<recording xmlns="urn:ietf:params:xml:ns:recording:1"><participant')).toThrow(SipParseError);
  });
});

describe('binding streams to participants', () => {
  const offer = parseOffer(SDP);
  const rule = agentRuleFrom('@cc\\.example\\.com$');

  it('by label, whatever the m-line order: swapping the labels swaps the speakers', () => {
    const m = parseMetadata(fixture('rfc7865.xml'));
    const bound = bindStreams(offer.streams, m, rule, new Map(), new Set());
    // Label 10 (first m-line) is the agent's stream; 20 Alice's.
    expect(bound.map((b) => [b.key, b.speaker, b.participant?.name])).toEqual([
      ['10', 'agent', 'Agent 2001'],
      ['20', 'customer', 'Alice Caller'],
    ]);
    const swapped = parseMetadata(
      fixture('rfc7865.xml')
        .replace('<label>10</label>', '<label>X</label>')
        .replace('<label>20</label>', '<label>10</label>')
        .replace('<label>X</label>', '<label>20</label>'),
    );
    expect(bindStreams(offer.streams, swapped, rule, new Map(), new Set()).map((b) => b.speaker)).toEqual(['customer', 'agent']);
  });

  it('without a rule the speaker is the AOR user; unique within the call; known streams keep theirs', () => {
    const m = parseMetadata(fixture('draft.xml'));
    const offer2 = parseOffer(SDP.replace('a=label:10', 'a=label:1').replace('a=label:20', 'a=label:2'));
    const taken = new Set(['4002']);
    expect(bindStreams(offer2.streams, m, null, new Map(), taken).map((b) => b.speaker)).toEqual(['15551230001', '4002-2']);
    expect(bindStreams(offer2.streams, m, null, new Map([['1', 'first']]), new Set()).map((b) => b.speaker)).toEqual(['first', '4002']);
    expect(bindStreams(offer2.streams, null, null, new Map(), new Set()).map((b) => b.speaker)).toEqual(['stream-1', 'stream-2']);
  });

  it('refuses metadata naming a stream label the SDP lacks (488)', () => {
    const m = parseMetadata(fixture('rfc7865.xml').replace('<label>20</label>', '<label>99</label>'));
    expect(() => bindStreams(offer.streams, m, rule, new Map(), new Set())).toThrow(SipRefusal);
    expect(() => bindStreams(offer.streams, m, rule, new Map(), new Set())).toThrow(/label 99/);
  });
});

describe('transactions and settings', () => {
  it('2xx resends double from T1 to T2 within 32 s; retransmissions find the cached answer', () => {
    const d = okRetransmitDelays();
    expect(d.slice(0, 5)).toEqual([500, 1000, 2000, 4000, 4000]);
    expect(d.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(32_000);
    const req = parseSipMessage(invite(SDP, 'application/sdp')) as SipRequest;
    const cache = new ResponseCache();
    cache.set(transactionKey(req), Buffer.from('answer'), 0);
    expect(cache.get(transactionKey(req), 1000)?.toString()).toBe('answer');
    expect(cache.get(transactionKey(req, 'CANCEL'), 1000)).toBeUndefined();
    expect(cache.get(transactionKey(req), 40_000)).toBeUndefined();
    expect(inDialogAnswer(undefined, 'BYE')).toBe(481);
    expect(inDialogAnswer('answering', 'INVITE')).toBe(491);
    expect(inDialogAnswer('confirmed', 'UPDATE')).toBe('handle');
    expect(inDialogAnswer('confirmed', 'REFER')).toBe(405);
  });

  it('validates the operator settings', () => {
    const ok = {
      host: '127.0.0.1',
      port: 5060,
      mediaAddress: '127.0.0.1',
      rtpPortMin: 20000,
      rtpPortMax: 20999,
      accountId: `acc_${'a'.repeat(20)}`,
      agentPattern: '^sip:2\\d{3}@',
      allowCidrs: ['10.0.0.0/8'],
      maxBodyBytes: 65536,
    };
    expect(checkSiprecSettings(ok)).toBe(ok);
    expect(parsePortRange('20000-20999')).toEqual({ min: 20000, max: 20999 });
    expect(() => checkSiprecSettings({ ...ok, agentPattern: '(' })).toThrow(/agent pattern/);
    expect(() => checkSiprecSettings({ ...ok, accountId: 'bob' })).toThrow(/account/);
    expect(() => checkSiprecSettings({ ...ok, mediaAddress: 'sbc.example' })).toThrow(/media address/);
  });
});

describe('the call title', () => {
  it('names the participants and the SIP ids, the ids kept when the names are long', () => {
    const m = parseMetadata(fixture('rfc7865.xml'));
    expect(callTitle(m, 'abc@sbc')).toBe(
      'SIPREC Alice Caller <sip:alice@customer.example.net> & Agent 2001 <sip:agent-2001@cc.example.com> (Call-ID abc@sbc, session 3fa1c2d4e5f60718293a4b5c6d7e8f90)',
    );
    const many = { ...m, participants: Array.from({ length: 9 }, (_v, i) => ({ ...m.participants[0]!, name: `Person number ${i}` })) };
    const t = callTitle(many, 'abc@sbc');
    expect([...t].length).toBeLessThanOrEqual(180);
    expect(t).toMatch(/… \(Call-ID abc@sbc, session 3fa1c2d4e5f60718293a4b5c6d7e8f90\)$/);
    expect(callTitle(null, 'x')).toBe('SIPREC recording (Call-ID x)');
  });
});
