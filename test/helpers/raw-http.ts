// HTTP/1.1 spoken by hand over a TCP socket, for requests no well-behaved client sends
// (malformed headers, bad percent-encoding, broken upgrades, trickled bodies) and for
// watching what the server does with the connection after it answers.
import net from 'node:net';

export interface RawResponse {
  status: number;
  /** Header names lower-cased; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
  /** The whole answer as received, head and body. */
  raw: string;
}

export interface RawConnection {
  socket: net.Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** The first complete response (head plus Content-Length body). */
  response(timeoutMs?: number): Promise<RawResponse>;
  /** Resolves when the server ends or resets the connection: how, and after how long. */
  ended: Promise<{ how: 'end' | 'reset'; afterMs: number }>;
  write(data: string | Buffer): void;
  destroy(): void;
}

export function rawConnect(port: number): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const t0 = Date.now();
    let data = Buffer.alloc(0);
    const waiters: Array<() => void> = [];
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      for (const w of waiters.splice(0)) w();
    });
    const ended = new Promise<{ how: 'end' | 'reset'; afterMs: number }>((res) => {
      let how: 'end' | 'reset' = 'end';
      socket.on('error', () => (how = 'reset'));
      socket.on('close', () => {
        res({ how, afterMs: Date.now() - t0 });
        for (const w of waiters.splice(0)) w();
      });
    });
    socket.once('connect', () =>
      resolve({
        socket,
        received: () => data.toString('latin1'),
        ended,
        write: (d) => socket.write(d),
        destroy: () => socket.destroy(),
        response: (timeoutMs = 5000) =>
          new Promise<RawResponse>((res, rej) => {
            const timer = setTimeout(
              () => rej(new Error(`no complete response within ${timeoutMs} ms; got ${JSON.stringify(data.toString('latin1'))}`)),
              timeoutMs,
            );
            const check = () => {
              const parsed = parseResponse(data);
              if (parsed) {
                clearTimeout(timer);
                res(parsed);
              } else if (socket.destroyed) {
                clearTimeout(timer);
                rej(new Error(`connection closed before a complete response; got ${JSON.stringify(data.toString('latin1'))}`));
              } else {
                waiters.push(check);
              }
            };
            check();
          }),
      }),
    );
    socket.once('error', reject);
  });
}

function parseResponse(data: Buffer): RawResponse | null {
  const text = data.toString('latin1');
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd < 0) return null;
  const [statusLine, ...lines] = text.slice(0, headEnd).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    const name = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const length = Number(headers['content-length'] ?? 0);
  const bodyBytes = data.subarray(Buffer.byteLength(text.slice(0, headEnd + 4), 'latin1'));
  if (bodyBytes.length < length) return null;
  return { status, headers, body: bodyBytes.subarray(0, length).toString('utf8'), raw: text };
}

/** Send one request as given and read one response. */
export async function rawRequest(port: number, request: string | Buffer, timeoutMs = 5000): Promise<RawResponse & { conn: RawConnection }> {
  const conn = await rawConnect(port);
  conn.write(request);
  try {
    return { ...(await conn.response(timeoutMs)), conn };
  } catch (err) {
    conn.destroy();
    throw err;
  }
}

/** A valid upgrade request to `path`, with `headers` replacing or adding to the defaults
 * (a null value drops a default). */
export function upgradeRequest(path: string, headers: Record<string, string | null> = {}, method = 'GET'): string {
  const all: Record<string, string | null> = {
    Host: 'localhost',
    Connection: 'Upgrade',
    Upgrade: 'websocket',
    'Sec-WebSocket-Version': '13',
    'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
    ...headers,
  };
  const lines = Object.entries(all).flatMap(([k, v]) => (v === null ? [] : [`${k}: ${v}`]));
  return `${method} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
}
