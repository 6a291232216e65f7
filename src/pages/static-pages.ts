// A browser page's static files (the console's, the desk's), served from a fixed list read
// once at registration: no path from a request ever reaches the file system. Every answer
// carries the page's Content-Security-Policy and headers, and an ETag from the content so a
// reload revalidates cheaply.
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ScribedError } from '../core/errors.js';

export interface StaticPages {
  /** Answer with the named file (one of the list), or 304 when the browser holds it. */
  send(reply: FastifyReply, name: string, ifNoneMatch: string | undefined): FastifyReply;
  /** `GET <prefix>:file` for every listed file; anything else is NOT_FOUND naming `what`. */
  route(app: FastifyInstance, prefix: string, what: string): void;
}

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** `files`: name -> content type; `headers`: sent with every file (the CSP first of all). */
export function staticPages(dir: string, files: Readonly<Record<string, string>>, headers: Readonly<Record<string, string>>): StaticPages {
  const assets = new Map<string, Asset>();
  for (const [name, type] of Object.entries(files)) {
    const body = fs.readFileSync(path.join(dir, name));
    assets.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  const send = (reply: FastifyReply, name: string, ifNoneMatch: string | undefined): FastifyReply => {
    const asset = assets.get(name)!;
    void reply.headers({ ...headers, 'cache-control': 'no-cache', etag: asset.etag });
    if (ifNoneMatch === asset.etag) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  };
  return {
    send,
    route(app, prefix, what) {
      app.get<{ Params: { file: string } }>(`${prefix}:file`, async (req, reply) => {
        if (!Object.hasOwn(files, req.params.file)) throw new ScribedError('NOT_FOUND', `no ${what} file ${req.params.file}`);
        return send(reply, req.params.file, req.headers['if-none-match']);
      });
    },
  };
}
