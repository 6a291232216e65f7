// A test-only stand-in for the recordings downloads (GET .../stt/transcriptions/{id}/audio,
// .../stt/calls/{id}/audio?leg=, built on another branch): a proxy in front of a real service
// that answers those two paths itself, with a fixture file and byte ranges as a browser's
// <audio> asks for them, after asking the real service whether the request's cookie may read
// that transcription or call (the same GET with the same Cookie). Everything else, WebSocket
// upgrades included, goes through to the service unchanged (Host and Origin too, so the desk's
// Origin check sees what the browser sent).
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

const AUDIO = /^\/sound_clone\/api\/v1\/stt\/(calls|transcriptions)\/([^/?]+)\/audio(?:\?.*)?$/;

export interface RecordingsStub {
  url: string;
  /** Requests the stub answered itself: `METHOD path status`. */
  served: string[];
  close(): Promise<void>;
}

function sendRange(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, type: string) {
  const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
  let start = 0;
  let end = body.length - 1;
  if (m) {
    start = m[1] ? Number(m[1]) : body.length - Number(m[2]);
    end = m[1] && m[2] ? Math.min(Number(m[2]), body.length - 1) : body.length - 1;
  }
  const headers = { 'content-type': type, 'accept-ranges': 'bytes', 'content-length': String(end - start + 1) };
  if (m) res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${end}/${body.length}` });
  else res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body.subarray(start, end + 1));
}

export async function startRecordingsStub(target: string, recordings: ReadonlyMap<string, Buffer>): Promise<RecordingsStub> {
  const up = new URL(target);
  const served: string[] = [];
  const server = http.createServer((req, res) => {
    const m = AUDIO.exec(req.url ?? '');
    if (m && (req.method === 'GET' || req.method === 'HEAD')) {
      void (async () => {
        // Authorised as the real route would be: the row must be the cookie's to read.
        const check = await fetch(`${target}/sound_clone/api/v1/stt/${m[1]}/${m[2]}`, { headers: { cookie: req.headers.cookie ?? '' } });
        const audio = recordings.get(m[2]!);
        const status = check.status !== 200 ? check.status : audio ? 200 : 404;
        served.push(`${req.method} ${req.url} ${status}`);
        if (status === 200) return sendRange(req, res, audio!, 'audio/wav');
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify({ code: -1, message: status === 404 ? 'NOT_FOUND: no recording' : `UNAUTHORIZED: ${status}` }));
      })().catch(() => res.destroy());
      return;
    }
    const forward = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    const upstream = net.connect(Number(up.port), up.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      socket.pipe(upstream);
      upstream.pipe(socket);
    });
    const end = () => {
      socket.destroy();
      upstream.destroy();
    };
    upstream.on('error', end);
    socket.on('error', end);
    upstream.on('close', end);
    socket.on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
