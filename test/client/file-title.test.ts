import { describe, expect, it } from 'vitest';
import { fileTitle } from '../../src/client/file-title.js';

describe('fileTitle', () => {
  it("is the file's name, not the path as typed", () => {
    expect(fileTitle('../calls/2026/call-0412.wav')).toBe('call-0412.wav');
  });

  it('cuts a long name to the limit in code points, never inside a surrogate pair', () => {
    const name = `${'a'.repeat(199)}😀${'b'.repeat(20)}.ulaw`;
    expect(fileTitle(`/tmp/${name}`)).toBe(`${'a'.repeat(199)}😀`);
    expect(fileTitle(`/tmp/${name}`, 199)).toBe('a'.repeat(199));
    expect([...fileTitle(`x/${'é'.repeat(300)}`)]).toHaveLength(200);
  });
});
