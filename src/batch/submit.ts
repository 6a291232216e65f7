// Turning an uploaded audio file into queued batch jobs: probe it, validate the fields against
// what the recognizer can do, bound the decode by what the account can pay for, decode it
// (once per channel of a multichannel upload), charge, create the job (or a call of one job
// per channel) and queue it. One implementation for every door a file comes in by: the native
// upload route (src/server/routes/batch.ts) and the API facades (src/server/facades/), so every rule,
// limit and charge is the same whichever API a client speaks.
//
// The caller has the file on disk (and deletes it afterwards); this module owns the decoded
// audio until a stored job names it, and deletes whatever no job owns on any outcome.
import fs from 'node:fs/promises';
import path from 'node:path';
import { charactersDue } from '../core/billing.js';
import { callRequestHash } from '../core/calls.js';
import { checkMultichannelFile, legTitle } from '../core/channels.js';
import { ScribedError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { DEFAULT_TITLE, withRedactionDefault } from '../core/session-options.js';
import type { EngineInfo } from '../engine/types.js';
import type { Metrics } from '../obs/metrics.js';
import type { BatchJobRecord, Store } from '../store/store.js';
import { decodeToRaw, probeAudio } from './audio.js';
import { audioAllowance, decodeCap, refuseDecoded, refuseStatedDuration } from './limits.js';
import { splitChannelFields } from './multichannel.js';
import { batchRequestHash, validateBatchRequest, type BatchRequest } from './request.js';
import type { BatchRunner } from './runner.js';
import { Semaphore } from './semaphore.js';

export interface BatchSubmitDeps {
  store: Store;
  engine: { info: EngineInfo };
  metrics: Metrics;
  runner: BatchRunner;
  /** Directory for decodes in flight. */
  dir: string;
  /** Longest audio one upload may decode to, in seconds (src/batch/limits.ts). */
  maxAudioSeconds: number;
  /** Uploads probed and decoded at once. */
  maxConcurrentDecodes: number;
  now: () => Date;
}

export interface BatchUpload {
  accountId: string;
  /** The uploaded file on disk (the caller deletes it). */
  file: string;
  /** SHA-256 (hex) of the uploaded bytes: what an Idempotency-Key is bound to, with the fields. */
  audioSha256: string;
  /** The native form fields: title, languageHint, options (a JSON object as text). */
  fields: Readonly<Record<string, string>>;
  idempotencyKey?: string;
  /** The file's name as the client gave it (a multichannel call's default title), or null. */
  uploadName: string | null;
}

/** `created`: the job (a multichannel upload: its first leg, which carries callId).
 * `replayed`: the job stored under the Idempotency-Key; null when the key was used with
 * another file or other fields. */
export type BatchSubmitOutcome = { kind: 'created'; job: BatchJobRecord } | { kind: 'replayed'; job: BatchJobRecord | null };

/** Log lines of a submit (the route's request logger). */
export interface SubmitLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export class BatchSubmitter {
  /** Probing and decoding run at most maxConcurrentDecodes at a time (each is an ffmpeg
   * process), whichever API the upload came by; the rest wait their turn. */
  private readonly decodeSlots: Semaphore;

  constructor(private readonly deps: BatchSubmitDeps) {
    this.decodeSlots = new Semaphore(deps.maxConcurrentDecodes);
  }

  /** Refusals are ScribedErrors of the table (VALIDATION_FAILED, UNSUPPORTED_AUDIO,
   * PAYLOAD_TOO_LARGE, INSUFFICIENT_CHARACTERS ...); nothing is charged or kept then. */
  async submit(upload: BatchUpload, log: SubmitLog): Promise<BatchSubmitOutcome> {
    const { store, runner } = this.deps;
    const token = path.basename(upload.file).replace(/[^A-Za-z0-9-]/g, '') || 'upload';
    const decodedPath = (leg: number) => path.join(this.deps.dir, `decode-${token}-${leg}.s16le`);
    const decodedPaths: string[] = [];
    /** The decoded audio's names in the audio store, until a stored job owns them. */
    let unowned: string[] = [];
    const accountId = upload.accountId;
    try {
      // multichannel and channelSpeakers (src/core/channels.ts); the rest is validated below.
      const split = splitChannelFields(upload.fields);
      const channels = split.channels;
      const prepared = await this.decodeSlots.run(async () => {
        const probed = await probeAudio(upload.file);
        // Telephone-band sources (8 kHz and below) stay at 8 kHz and go to the telephony
        // front end, as a mulaw_8000 session would; everything else is decoded to the
        // engine's rate. Upsampling narrowband audio to 16 kHz for the wideband model
        // recognizes it far worse (docs/engines.md).
        const info = this.deps.engine.info;
        const rate = probed.sampleRate > 0 && probed.sampleRate <= 8000 ? 8000 : info.sampleRate;
        const checked = validateBatchRequest(split.fields, rate, {
          languages: info.languages,
          detectsLanguage: info.detectsLanguage ?? false,
        });
        if (channels) checkMultichannelFile(probed.channels);
        // The channel options are part of the stored options (and so of the Idempotency-Key's
        // request); a stereo file without them is mixed down as before, with a notice.
        const valid: BatchRequest = channels
          ? { ...checked, effectiveOptions: withChannelOptions(checked.effectiveOptions, channels.speakers) }
          : probed.channels > 1
            ? {
                ...checked,
                notices: [
                  ...checked.notices,
                  {
                    code: 'CHANNELS_MIXED_DOWN',
                    message: `the file has ${probed.channels} channels, mixed down to one; send options {"multichannel": true} to transcribe each channel as a leg of a call`,
                  },
                ],
              }
            : checked;
        const legs = channels ? channels.speakers.length : 1;
        const idempotency =
          upload.idempotencyKey === undefined
            ? null
            : { key: upload.idempotencyKey, requestHash: batchRequestHash(upload.audioSha256, valid) };
        // A retry of a stored upload answers before decoding it again, whatever the balance
        // is now (the create below checks once more, in its transaction, for a duplicate
        // sent in parallel).
        const earlier = idempotency && (await store.findBatchJobByIdempotencyKey(accountId, idempotency.key));
        if (earlier) return { kind: 'replay' as const, job: earlier.requestHash === idempotency.requestHash ? earlier.job : null };
        // What the account can pay for and the server allows, before anything is decoded
        // (src/batch/limits.ts): a stated duration over it is refused now, and the decode
        // cannot write more than it plus one second whatever the container claims.
        // A multichannel upload is charged per channel, so the balance buys 1/legs of it.
        const allowance = audioAllowance((await store.getAccount(accountId))?.characters ?? 0n, this.deps.maxAudioSeconds, legs);
        const stated = refuseStatedDuration(probed.durationSec, allowance);
        if (stated) throw stated;
        const samples: bigint[] = [];
        for (let leg = 0; leg < legs; leg++) {
          const out = decodedPath(leg);
          decodedPaths.push(out);
          await decodeToRaw(upload.file, out, rate, decodeCap(allowance, rate), undefined, channels ? leg : null);
          const n = BigInt(Math.floor((await fs.stat(out)).size / 2));
          if (n === 0n) throw new ScribedError('UNSUPPORTED_AUDIO', 'the file decodes to no audio samples');
          const over = refuseDecoded(n, rate, allowance);
          if (over) throw over;
          samples.push(n);
        }
        return { kind: 'decoded' as const, probed, rate, valid, idempotency, samples };
      });
      if (prepared.kind === 'replay') return { kind: 'replayed', job: prepared.job };
      const { probed, rate, idempotency, samples } = prepared;
      // The account's default redact policies are added after the Idempotency-Key hash (of the
      // request alone) was taken (docs/redaction.md).
      const defaults = (await store.getRedactionDefault(accountId))?.policies;
      const valid = { ...prepared.valid, effectiveOptions: withRedactionDefault(prepared.valid.effectiveOptions, defaults) };
      if (channels) {
        const now = this.deps.now();
        const callTitle = valid.title === DEFAULT_TITLE && upload.uploadName !== null ? upload.uploadName : valid.title;
        // A call lists its legs by (createdAt, id): ids made in one millisecond order at
        // random, so they are sorted and handed out in channel order.
        const ids = channels.speakers.map(() => newId('stt', now)).sort();
        const legs = channels.speakers.map((speaker, i) => ({ speaker, id: ids[i]!, samples: samples[i]!, decoded: decodedPaths[i]! }));
        for (const leg of legs) {
          unowned.push(`${leg.id}.s16le`);
          await runner.audio.write(`${leg.id}.s16le`, leg.decoded);
        }
        const callId = newId('call', now);
        const total = legs.reduce((sum, l) => sum + charactersDue(l.samples, rate), 0n);
        const outcome = await store.createBatchCall({
          // The call's own key (calls have a namespace of their own): the upload is the
          // call's only creator, so its first leg's id makes a key nothing else uses.
          call: {
            id: callId,
            accountId,
            title: callTitle,
            idempotencyKey: `batch-upload-${legs[0]!.id}`,
            requestHash: callRequestHash({ title: callTitle, externalId: null }),
            createdAt: now.toISOString(),
          },
          legs: legs.map((l) => ({
            job: {
              transcriptionId: l.id,
              accountId,
              options: valid.effectiveOptions as unknown as Record<string, unknown>,
              notices: valid.notices,
              audioFile: `${l.id}.s16le`,
              charactersCharged: charactersDue(l.samples, rate),
              source: { ...probed },
              createdAt: now.toISOString(),
            },
            speaker: l.speaker,
            title: legTitle(callTitle, l.speaker),
            audioSamples: l.samples,
          })),
          languageHint: valid.languageHint,
          sampleRateHz: rate,
          idempotency,
        });
        if (outcome.kind === 'insufficient')
          throw new ScribedError(
            'INSUFFICIENT_CHARACTERS',
            `transcribing this file's ${legs.length} channels costs ${total} Characters, more than the balance`,
          );
        if (outcome.kind === 'conflict') return { kind: 'replayed', job: null };
        if (outcome.kind === 'replayed') return { kind: 'replayed', job: outcome.job };
        unowned = []; // the jobs' now
        this.deps.metrics.callsCreated.inc();
        for (const l of legs) {
          runner.enqueue(l.id);
          this.deps.metrics.batchJobs.inc({ outcome: 'queued' });
        }
        log.info(
          { callId, transcriptionIds: legs.map((l) => l.id), format: probed.format, codec: probed.codec, samples: samples[0]!.toString() },
          'multichannel batch upload queued as a call',
        );
        return { kind: 'created', job: outcome.job };
      }

      const now = this.deps.now();
      const id = newId('stt', now);
      const audioFile = `${id}.s16le`;
      unowned = [audioFile];
      await runner.audio.write(audioFile, decodedPaths[0]!);
      const outcome = await store.createBatchJob({
        job: {
          transcriptionId: id,
          accountId,
          options: valid.effectiveOptions as unknown as Record<string, unknown>,
          notices: valid.notices,
          audioFile,
          charactersCharged: charactersDue(samples[0]!, rate),
          source: { ...probed },
          createdAt: now.toISOString(),
        },
        title: valid.title,
        languageHint: valid.languageHint,
        sampleRateHz: rate,
        audioSamples: samples[0]!,
        idempotency,
      });
      if (outcome.kind === 'insufficient') {
        throw new ScribedError(
          'INSUFFICIENT_CHARACTERS',
          `transcribing this file costs ${charactersDue(samples[0]!, rate)} Characters, more than the balance`,
        );
      }
      if (outcome.kind === 'conflict') return { kind: 'replayed', job: null };
      if (outcome.kind === 'replayed') return { kind: 'replayed', job: outcome.job };
      unowned = []; // the job's now: the node that ends the job deletes it
      runner.enqueue(id);
      this.deps.metrics.batchJobs.inc({ outcome: 'queued' });
      log.info({ transcriptionId: id, format: probed.format, codec: probed.codec, samples: samples[0]!.toString() }, 'batch job queued');
      return { kind: 'created', job: outcome.job };
    } finally {
      // Whatever ended the submit (a refusal, a replay, or the create itself throwing), no
      // audio of it stays unless a stored job names it.
      for (const p of decodedPaths) await fs.rm(p, { force: true });
      for (const name of unowned) {
        await runner.audio
          .remove(name)
          .catch((err: unknown) =>
            log.warn({ err, file: name }, 'could not delete the audio of an upload that created no job; the sweep removes it'),
          );
      }
    }
  }
}

/** A multichannel upload's effective options: the validated ones and the channel options. */
function withChannelOptions(options: BatchRequest['effectiveOptions'], speakers: string[]): BatchRequest['effectiveOptions'] {
  const channelOptions = { multichannel: true, channelSpeakers: speakers };
  return { ...options, ...channelOptions };
}

const submitters = new WeakMap<object, BatchSubmitter>();

/** The node's one submitter for these batch settings, so every upload route shares the same
 * bound on decodes at once. */
export function batchSubmitterFor(key: object, deps: () => BatchSubmitDeps): BatchSubmitter {
  let s = submitters.get(key);
  if (!s) {
    s = new BatchSubmitter(deps());
    submitters.set(key, s);
  }
  return s;
}
