import { describe, expect, it } from 'vitest';
import { checkMultichannelFile, legTitle, parseChannelSpeakersFlag, splitChannelOptions } from '../../src/core/channels.js';
import { MAX_TITLE_CHARS } from '../../src/core/session-options.js';
import { splitChannelFields } from '../../src/batch/multichannel.js';

describe('splitChannelOptions', () => {
  it('takes the channel options out and defaults the speakers to agent and customer', () => {
    expect(splitChannelOptions({ multichannel: true, readableText: false })).toEqual({
      rest: { readableText: false },
      channels: { speakers: ['agent', 'customer'] },
    });
    expect(splitChannelOptions({ multichannel: true, channelSpeakers: ['rep', 'caller'] }).channels).toEqual({
      speakers: ['rep', 'caller'],
    });
    expect(splitChannelOptions({ multichannel: false, x: 1 })).toEqual({ rest: { x: 1 }, channels: null });
    expect(splitChannelOptions({})).toEqual({ rest: {}, channels: null });
  });

  it('refuses what would be ignored or cannot name a call leg', () => {
    expect(() => splitChannelOptions({ multichannel: 1 })).toThrow('options.multichannel: must be a boolean');
    expect(() => splitChannelOptions({ channelSpeakers: ['a', 'b'] })).toThrow('applies only with options.multichannel: true');
    expect(() => splitChannelOptions({ multichannel: true, channelSpeakers: ['a', 'b', 'c'] })).toThrow('must be an array of 2');
    expect(() => splitChannelOptions({ multichannel: true, channelSpeakers: ['a', 'a'] })).toThrow('different speaker');
    expect(() => splitChannelOptions({ multichannel: true, channelSpeakers: ['a', '-b'] })).toThrow('options.channelSpeakers[1]');
  });
});

describe('checkMultichannelFile', () => {
  it('takes exactly two channels', () => {
    expect(() => checkMultichannelFile(2)).not.toThrow();
    expect(() => checkMultichannelFile(1)).toThrow('the file has 1 channel;');
    expect(() => checkMultichannelFile(6)).toThrow('the file has 6 channels;');
  });
});

describe('parseChannelSpeakersFlag and legTitle', () => {
  it('reads a comma list', () => {
    expect(parseChannelSpeakersFlag('agent, customer')).toEqual(['agent', 'customer']);
    expect(() => parseChannelSpeakersFlag('agent')).toThrow('--channel-speakers');
  });

  it('keeps a leg title within the title limit', () => {
    expect(legTitle('call.wav', 'agent')).toBe('call.wav: agent');
    const long = legTitle('x'.repeat(MAX_TITLE_CHARS), 'customer');
    expect([...long].length).toBe(MAX_TITLE_CHARS);
    expect(long.endsWith(': customer')).toBe(true);
  });
});

describe('splitChannelFields', () => {
  it('rewrites the options field without the channel options and leaves other fields alone', () => {
    const out = splitChannelFields({ title: 't', options: '{"multichannel":true,"readableText":false}' });
    expect(out.fields).toEqual({ title: 't', options: '{"readableText":false}' });
    expect(out.channels).toEqual({ speakers: ['agent', 'customer'] });
  });

  it('passes a field it cannot read untouched (validateBatchRequest refuses it)', () => {
    expect(splitChannelFields({ options: 'not json' })).toEqual({ fields: { options: 'not json' }, channels: null });
    expect(splitChannelFields({ options: '[1]' })).toEqual({ fields: { options: '[1]' }, channels: null });
    expect(splitChannelFields({ options: '{"readableText":true}' })).toEqual({
      fields: { options: '{"readableText":true}' },
      channels: null,
    });
  });
});
