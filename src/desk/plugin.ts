// The desk (docs/desk.md): static files served at /desk/, plain ES modules as they are in
// src/desk/public (no framework, no CDN, no build step), as the console is served
// (src/console/plugin.ts). A fixed list of files read once at registration: no path from a
// request reaches the file system. The Content-Security-Policy keeps the page to its own
// scripts and styles, its connections and recordings to this origin, and forbids framing (the
// desk acts with a session cookie, so it must not be clickjacked).
import path from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import { packageRoot } from '../config.js';
import { staticPages } from '../pages/static-pages.js';
import { DESK_LOGIN_PATH, DESK_PATH } from './policy.js';

const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'login.html': 'text/html; charset=utf-8',
  'desk.css': 'text/css; charset=utf-8',
  'desk.js': 'text/javascript; charset=utf-8',
  'desk-api.js': 'text/javascript; charset=utf-8',
  'transcript-view.js': 'text/javascript; charset=utf-8',
  'live-view.js': 'text/javascript; charset=utf-8',
  'timeline.js': 'text/javascript; charset=utf-8',
  'agent-view.js': 'text/javascript; charset=utf-8',
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

export function deskPages(dir = deskPublicDir()): FastifyPluginAsync {
  const pages = staticPages(dir, FILES, {
    'content-security-policy': DESK_CSP,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
  });
  return async (app) => {
    app.get('/desk', async (_req, reply) => reply.redirect(DESK_PATH, 301));
    app.get(DESK_PATH, async (req, reply) => pages.send(reply, 'index.html', req.headers['if-none-match']));
    // The login link's address; its token is in the fragment, which no request carries.
    app.get(DESK_LOGIN_PATH, async (req, reply) => pages.send(reply, 'login.html', req.headers['if-none-match']));
    pages.route(app, DESK_PATH, 'desk');
  };
}
