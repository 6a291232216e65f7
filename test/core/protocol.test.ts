import { describe, expect, it } from 'vitest';
import { API_BASE, CLOSE_CODES, segmentId, segmentIndex } from '../../src/core/protocol.js';

describe('protocol constants', () => {
  it('segment ids round-trip and nothing else parses as one', () => {
    for (const i of [0, 1, 9, 10, 12345]) expect(segmentIndex(segmentId(i))).toBe(i);
    for (const bad of ['seg_', 'seg_01', 'seg_-1', 'seg_1a', 'xseg_1', 'seg_1 ', 'rts_1', '12']) expect(segmentIndex(bad)).toBeNull();
  });

  it('close codes and the base path are the documented ones', () => {
    expect(CLOSE_CODES).toEqual({ normal: 1000, internal: 1011, serviceRestart: 1012, tryAgainLater: 1013, superseded: 4000, sessionClosed: 4001 });
    expect(API_BASE).toBe('/sound_clone/api/v1');
  });
});
