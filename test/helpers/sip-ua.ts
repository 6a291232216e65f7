// A bare SIP user agent over UDP for the recording server's dialog tests (test/server/siprec*.test.ts):
// requests in a dialog, ACK and CANCEL on cue, and every message it receives kept in order.
import dgram from 'node:dgram';
import type net from 'node:net';

/** A bare SIP user agent over UDP for the dialog cases (SIPp cannot withhold an ACK or send
 * CANCEL mid-answer on cue). */
export class SipUa {
  private readonly inbox: string[] = [];
  private waiters: Array<() => void> = [];
  private constructor(
    private readonly sock: dgram.Socket,
    private readonly sipPort: number,
  ) {
    sock.on('message', (m) => {
      this.inbox.push(m.toString());
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** A user agent on a free UDP port of 127.0.0.1, talking to the recorder at `sipPort`. */
  static async open(sipPort: number): Promise<SipUa> {
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    return new SipUa(sock, sipPort);
  }

  get port(): number {
    return (this.sock.address() as net.AddressInfo).port;
  }

  send(text: string): void {
    this.sock.send(text, this.sipPort, '127.0.0.1');
  }

  received(pred: (m: string) => boolean): boolean {
    return this.inbox.some(pred);
  }

  /** The next message (from now on) matching `pred`. */
  async next(pred: (m: string) => boolean, ms: number): Promise<string> {
    const deadline = Date.now() + ms;
    let seen = this.inbox.length;
    for (;;) {
      for (; seen < this.inbox.length; seen++) if (pred(this.inbox[seen]!)) return this.inbox[seen]!;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no matching SIP message');
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  dialog(callId: string) {
    let cseq = 0;
    let toTag = '';
    let inviteBranch = '';
    const head = (method: string, n: number, branch: string) => [
      `${method} sip:srs@127.0.0.1 SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${this.port};branch=${branch}`,
      `From: <sip:src@127.0.0.1>;tag=f-${callId}`,
      `To: <sip:srs@127.0.0.1>${toTag ? `;tag=${toTag}` : ''}`,
      `Call-ID: ${callId}`,
      `CSeq: ${n} ${method}`,
      `Contact: <sip:src@127.0.0.1:${this.port}>`,
    ];
    return {
      request: async (method: string, type?: string, body = ''): Promise<{ status: number; text: string }> => {
        const n = ++cseq;
        const branch = `z9hG4bK-${callId}-${n}`;
        if (method === 'INVITE') inviteBranch = branch;
        const lines = [
          ...head(method, n, branch),
          ...(type ? [`Content-Type: ${type}`] : []),
          `Content-Length: ${Buffer.byteLength(body)}`,
          '',
          body,
        ];
        const waiting = this.next(
          (m) => /^SIP\/2\.0 [2-6]\d\d/.test(m) && m.includes(`Call-ID: ${callId}\r\n`) && m.includes(`CSeq: ${n} ${method}`),
          10_000,
        );
        this.send(lines.join('\r\n'));
        const text = await waiting;
        const tag = /\r\nTo: [^\r]*;tag=([^;\r]+)/.exec(text)?.[1];
        if (tag && !toTag && text.startsWith('SIP/2.0 200')) toTag = tag;
        return { status: Number(text.slice(8, 11)), text };
      },
      ack: (res: { text: string }): void => {
        const n = Number(/CSeq: (\d+)/.exec(res.text)![1]);
        this.send([...head('ACK', n, `z9hG4bK-${callId}-ack${n}`), 'Content-Length: 0', '', ''].join('\r\n'));
      },
      cancel: (): void => {
        const lines = head('CANCEL', cseq, inviteBranch).map((l) => l.replace(/^To: .*/, 'To: <sip:srs@127.0.0.1>'));
        this.send([...lines, 'Content-Length: 0', '', ''].join('\r\n'));
      },
    };
  }

  close(): void {
    this.sock.close();
  }
}
