// Which participant speaks on which stream, and what the leg is called: streams are bound to
// participants through the metadata's stream labels and the SDP's `a=label`, never by the order
// of the m-lines (agent and customer swapped is the failure recording servers are known for).
// The operator's agent rule (a pattern over the participant's AOR and name) says which
// participant is the agent; the others are customers. Pure.
import { SipParseError } from './message.js';
import type { OfferedStream } from './sdp.js';
import type { MetaParticipant, RecordingMetadata } from './metadata.js';

export interface BoundStream {
  stream: OfferedStream;
  /** The stream's key in its dialog: its label, or `#<m-line index>` without one. */
  key: string;
  participant: MetaParticipant | null;
  speaker: string;
}

/** Raised as 488 Not Acceptable Here: the offer cannot be recorded as described. */
export class SipRefusal extends Error {
  constructor(
    readonly status: 488 | 400,
    message: string,
  ) {
    super(message);
  }
}

export function streamKey(s: OfferedStream): string {
  return s.label ?? `#${s.index}`;
}

function matchesLabel(label: string, s: OfferedStream): boolean {
  // `#N` names the m-line at index N (Cisco's media-index, or a stream without a label).
  if (label.startsWith('#')) return s.index === Number(label.slice(1));
  return s.label === label;
}

/** A speaker label (the call's SPEAKER_PATTERN) from free text: `sip:alice@x` -> `alice`. */
export function slug(text: string): string {
  const user = /^(?:sips?:|tel:)?([^@;]+)/i.exec(text)?.[1] ?? text;
  const s = user.replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return s.slice(0, 28) || 'participant';
}

export interface AgentRule {
  test(participant: MetaParticipant): boolean;
}

/** The operator's rule: a participant whose AOR or name matches the pattern is the agent. */
export function agentRuleFrom(pattern: string | undefined): AgentRule | null {
  if (pattern === undefined) return null;
  const re = new RegExp(pattern, 'i');
  return { test: (p) => (p.aor !== null && re.test(p.aor)) || (p.name !== null && re.test(p.name)) };
}

function unique(base: string, taken: Set<string>): string {
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base.slice(0, 28)}-${n}`;
  taken.add(name);
  return name;
}

/**
 * Binds each live audio stream of an offer (port not 0) to its participant. `known` holds the
 * speakers of streams already recorded in this dialog by key (a re-INVITE keeps them);
 * `taken` every speaker label the call has, updated with the new ones. A stream the metadata
 * names by a label no m-line carries is refused (the sender and this server disagree on what
 * is recorded).
 */
export function bindStreams(
  streams: readonly OfferedStream[],
  metadata: RecordingMetadata | null,
  rule: AgentRule | null,
  known: ReadonlyMap<string, string>,
  taken: Set<string>,
): BoundStream[] {
  const audio = streams.filter((s) => s.port !== 0);
  if (metadata) {
    for (const ms of metadata.streams) {
      if (ms.label !== null && !streams.some((s) => matchesLabel(ms.label!, s)))
        throw new SipRefusal(488, `the metadata names stream label ${ms.label}, which the SDP does not carry`);
    }
  }
  return audio.map((stream) => {
    const key = streamKey(stream);
    const metaStream = metadata?.streams.find((ms) => ms.label !== null && matchesLabel(ms.label, stream));
    const participant = metaStream ? (metadata!.participants.find((p) => p.sends.includes(metaStream.id)) ?? null) : null;
    const already = known.get(key);
    if (already !== undefined) return { stream, key, participant, speaker: already };
    let base: string;
    if (participant && rule) base = rule.test(participant) ? 'agent' : 'customer';
    else if (participant) base = slug(participant.aor ?? participant.name ?? participant.id);
    else base = `stream-${slug(stream.label ?? String(stream.index))}`;
    return { stream, key, participant, speaker: unique(base, taken) };
  });
}

/** A refusal for a stream no codec of ours fits (488); SRTP streams too unless their SDES keys
 * were taken (`srtpKeyed`, src/core/sip/sdes.ts). */
export function checkCodecs(streams: readonly OfferedStream[], srtpKeyed = false): void {
  for (const s of streams) {
    if (s.port === 0) continue;
    if (s.secure && !srtpKeyed)
      throw new SipRefusal(488, `stream ${streamKey(s)} is SRTP (RTP/SAVP), which this recorder does not decrypt`);
    if (!s.codec)
      throw new SipRefusal(
        488,
        `stream ${streamKey(s)} offers no supported codec (offered: ${s.offered.join(', ')}; supported: PCMU, PCMA, G722)`,
      );
  }
}

export { SipParseError };
