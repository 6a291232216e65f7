// Closing a connection whose request body was not all read, without losing the answer.
//
// A request refused before its body is read (a wrong key, no such route, a limit) is answered
// with `Connection: close`: keeping the connection would mean reading a body nobody wants for
// as long as the client sends it. But closing a socket while the client's bytes are still
// arriving (unread in the kernel's buffer, or still on the way) makes the kernel answer them
// with a reset, and a client still writing its upload then fails its write (EPIPE, ECONNRESET)
// before it has read the answer: the OpenAI SDK reports "Connection error." instead of its
// AuthenticationError. So after the answer this side is shut for writing (FIN: the client sees
// the answer end) and the rest of what the client sends is read and discarded, up to a bound
// in bytes and in time, before the socket is destroyed. The client normally hangs up first, as
// soon as it has read an answer to a request it has not finished sending (undici does).
// Web servers call this a lingering close.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** What a lingering close discards at most, after the answer, before it destroys the socket. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
export const LINGER_MAX_MS = 2000;
const CHECK_MS = 50;

/**
 * From now on, when Node closes `req`'s connection after the answer (it does so for an
 * answer that says `Connection: close`), linger as described above instead of destroying
 * the socket at once. Only this socket is changed.
 */
export function lingerOnClose(req: IncomingMessage, maxBytes = LINGER_MAX_BYTES, maxMs = LINGER_MAX_MS): void {
  const socket = req.socket as Socket;
  // Node's HTTP server ends an answered `Connection: close` connection with destroySoon():
  // end, then destroy once the answer is flushed. Replaced on this socket only.
  socket.destroySoon = function lingeringClose(this: Socket): void {
    if (this.writable) this.end();
    // Whatever was reading the body (a multipart parser that gave up) lets go, so the bytes
    // keep being pulled off the wire (the HTTP parser drops a dumped request's body).
    req.unpipe();
    req.resume();
    const startBytes = this.bytesRead;
    const t0 = Date.now();
    const stop = (): void => {
      clearInterval(check);
      if (!this.destroyed) this.destroy();
    };
    const check = setInterval(() => {
      if (this.bytesRead - startBytes > maxBytes || Date.now() - t0 >= maxMs) stop();
    }, CHECK_MS);
    check.unref();
    this.once('end', stop);
    this.once('close', stop);
    this.resume();
  };
}
