// The desk (docs/desk.md): static files served at /desk/, plain ES modules as they are in
// src/desk/public (no framework, no CDN, no build step), as the console is served
// (src/console/plugin.ts). A fixed list of files read once at registration: no path from a
// request reaches the file system. The Content-Security-Policy keeps the page to its own
// scripts and styles, its connections and recordings to this origin, and forbids framing (the
// desk acts with a session cookie, so it must not be clickjacked).
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { packageRoot } from '../config.js';
import { ScribedError } from '../core/errors.js';
import { DESK_LOGIN_PATH, DESK_PATH } from './policy.js';

const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'login.html': 'text/html; charset=utf-8',
  'desk.css': 'text/css; charset=utf-8',
  'desk.js': 'text/javascript; charset=utf-8',
  'desk-api.js': 'text/javascript; charset=utf-8',
  'transcript-view.js': 'text/javascript; charset=utf-8',
  'live-view.js': 'text/javascript; charset=utf-8',
  'login.js': 'text/javascript; charset=utf-8',
};

export const DESK_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "media-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function deskPublicDir(): string {
  return path.join(packageRoot(), 'src', 'desk', 'public');
}

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

export function deskPages(dir = deskPublicDir()): FastifyPluginAsync {
  const assets = new Map<string, Asset>();
  for (const [name, type] of Object.entries(FILES)) {
    const body = fs.readFileSync(path.join(dir, name));
    assets.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  const send = (reply: FastifyReply, asset: Asset, ifNoneMatch: string | undefined) => {
    void reply
      .header('content-security-policy', DESK_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .header('etag', asset.etag);
    if (ifNoneMatch === asset.etag) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  };

  return async (app) => {
    app.get('/desk', async (_req, reply) => reply.redirect(DESK_PATH, 301));
    app.get(DESK_PATH, async (req, reply) => send(reply, assets.get('index.html')!, req.headers['if-none-match']));
    // The login link's address; its token is in the fragment, which no request carries.
    app.get(DESK_LOGIN_PATH, async (req, reply) => send(reply, assets.get('login.html')!, req.headers['if-none-match']));
    app.get<{ Params: { file: string } }>(`${DESK_PATH}:file`, async (req, reply) => {
      const asset = Object.hasOwn(FILES, req.params.file) ? assets.get(req.params.file) : undefined;
      if (!asset) throw new ScribedError('NOT_FOUND', `no desk file ${req.params.file}`);
      return send(reply, asset, req.headers['if-none-match']);
    });
  };
}
