// AssemblyAI's uploads (POST /v2/upload): the raw body staged under the native upload limit in
// a directory of this node beside the batch directory (not in it: the batch runner deletes
// what no job names there), with a note of the account that sent it. The answer's upload_url
// is an opaque reference on this server, `/v2/upload/<id>`: it embeds no secret and serves
// nothing (a GET of it is 404); POST /v2/transcript resolves it for the account that uploaded
// it only, and another account's upload reads as one that does not exist. Uploads are kept
// for UPLOAD_TTL_MS (a transcript may be made from one more than once, as AssemblyAI allows)
// and at most MAX_UPLOADS_PER_ACCOUNT a time; expired ones are deleted at the next upload.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { stageStream, type StagedFile } from '../staged-upload.js';
import { AssemblyAiError, badRequest } from './errors.js';

export const UPLOAD_TTL_MS = 24 * 3600_000;
export const MAX_UPLOADS_PER_ACCOUNT = 20;
const ID = /^[0-9a-f]{32}$/;
export const UPLOAD_PATH = '/v2/upload/';

interface UploadNote {
  accountId: string;
  sha256: string;
  bytes: number;
  createdAt: string;
}

export class UploadStore {
  constructor(
    readonly dir: string,
    private readonly maxBytes: number,
    private readonly now: () => Date,
  ) {}

  private audio(id: string): string {
    return path.join(this.dir, `${id}.audio`);
  }

  private note(id: string): string {
    return path.join(this.dir, `${id}.json`);
  }

  private async notes(): Promise<Array<{ id: string; note: UploadNote }>> {
    const names = await fs.readdir(this.dir).catch(() => [] as string[]);
    const out: Array<{ id: string; note: UploadNote }> = [];
    for (const name of names) {
      if (!name.endsWith('.json')) continue;
      const id = name.slice(0, -'.json'.length);
      const note = await this.read(id);
      if (note) out.push({ id, note });
    }
    return out;
  }

  private async read(id: string): Promise<UploadNote | null> {
    try {
      return JSON.parse(await fs.readFile(this.note(id), 'utf8')) as UploadNote;
    } catch {
      return null;
    }
  }

  private async remove(id: string): Promise<void> {
    await fs.rm(this.note(id), { force: true });
    await fs.rm(this.audio(id), { force: true });
  }

  /** Delete expired uploads; answers the account's live ones. */
  private async sweep(accountId: string): Promise<number> {
    const cutoff = this.now().getTime() - UPLOAD_TTL_MS;
    let live = 0;
    for (const { id, note } of await this.notes()) {
      if (Date.parse(note.createdAt) < cutoff) await this.remove(id);
      else if (note.accountId === accountId) live++;
    }
    return live;
  }

  /** Stage `body` for the account; answers its id. */
  async put(accountId: string, body: Readable): Promise<string> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    if ((await this.sweep(accountId)) >= MAX_UPLOADS_PER_ACCOUNT)
      throw new AssemblyAiError(
        429,
        `at most ${MAX_UPLOADS_PER_ACCOUNT} uploads an account are kept at a time (each for ${UPLOAD_TTL_MS / 3600_000} h); transcribe or wait`,
      );
    const id = randomBytes(16).toString('hex');
    try {
      const staged = await stageStream(body, this.audio(id), this.maxBytes);
      if (staged.bytes === 0) throw badRequest('the upload holds no data');
      const note: UploadNote = { accountId, sha256: staged.sha256, bytes: staged.bytes, createdAt: this.now().toISOString() };
      await fs.writeFile(this.note(id), JSON.stringify(note), { mode: 0o600 });
      return id;
    } catch (err) {
      await this.remove(id);
      throw err;
    }
  }

  /** The staged file an upload URL names, for its own account only; null otherwise (another
   * account's, expired, unknown, or not an upload URL of this server). */
  async resolve(accountId: string, audioUrl: string): Promise<StagedFile | null> {
    const id = uploadIdOf(audioUrl);
    if (id === null) return null;
    const note = await this.read(id);
    if (note === null || note.accountId !== accountId || Date.parse(note.createdAt) < this.now().getTime() - UPLOAD_TTL_MS) return null;
    return { path: this.audio(id), sha256: note.sha256, bytes: note.bytes };
  }
}

/** The upload id an http(s) URL's path names (`/v2/upload/<id>`), or null. The host is not
 * read: behind a proxy the name a client uses may not be the one this node sees. */
export function uploadIdOf(audioUrl: string): string | null {
  let url: URL;
  try {
    url = new URL(audioUrl);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (!url.pathname.startsWith(UPLOAD_PATH)) return null;
  const id = url.pathname.slice(UPLOAD_PATH.length);
  return ID.test(id) ? id : null;
}
