// The live transcript console (docs/console.md): static files served at /console/, plain ES
// modules as they are in src/console/public (no build step). The page holds no credential: it
// is opened with `#session=...&ticket=...` (the fragment never reaches a server) and opens the
// stream socket with `?ticket=` (docs/protocol.md, Connecting).
//
// A fixed list of files read once at registration: no path from a request ever reaches the
// file system. Every answer carries a Content-Security-Policy that lets the page load its own
// scripts and styles only and connect only to this origin (the socket included), so a ticket
// in the page can go nowhere else.
import path from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import { packageRoot } from '../config.js';
import { staticPages } from '../pages/static-pages.js';

export const CONSOLE_PATH = '/console/';

/** The page's files and their types; anything else under /console/ is 404. */
const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'protocol.js': 'text/javascript; charset=utf-8',
  'audio.js': 'text/javascript; charset=utf-8',
  'capture-worklet.js': 'text/javascript; charset=utf-8',
  // The call view (docs/console.md, "The call view").
  'call.html': 'text/html; charset=utf-8',
  'call.css': 'text/css; charset=utf-8',
  'call.js': 'text/javascript; charset=utf-8',
  'call-view.js': 'text/javascript; charset=utf-8',
};

/** 'self' covers ws:/wss: to this host in current browsers (CSP level 3). No frame-ancestors:
 * embedding is allowed (docs/console.md, "Embedding"); blob: for the transcript the page
 * assembles itself. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

export function consolePublicDir(): string {
  return path.join(packageRoot(), 'src', 'console', 'public');
}

export function consoleRoutes(dir = consolePublicDir()): FastifyPluginAsync {
  const pages = staticPages(dir, FILES, {
    'content-security-policy': CONSOLE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  });
  return async (app) => {
    // A redirect keeps the fragment (browsers carry it over when Location has none).
    app.get('/console', async (_req, reply) => reply.redirect(CONSOLE_PATH, 301));
    app.get(CONSOLE_PATH, async (req, reply) => pages.send(reply, 'index.html', req.headers['if-none-match']));
    pages.route(app, CONSOLE_PATH, 'console');
  };
}
