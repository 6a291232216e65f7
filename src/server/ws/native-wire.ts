// The native stream socket's edge (docs/protocol.md): a binary message is an audio frame, a
// text message a JSON control object; both are read here and become the session's typed
// commands (src/session/session-driver.ts). A message that cannot be read is refused through
// the session, so its `error` event keeps its place among the session's events and says what
// it said when the session read the wire itself.
import { decodeAudioFrame, parseControlMessage, type AudioFrame, type ControlMessage } from '../../core/frame.js';
import type { SessionDriver } from '../../session/session-driver.js';

/** One binary message: the 16-byte header read, the payload handed on as it is (no copy). */
export function nativeBinary(driver: SessionDriver, data: Uint8Array): Promise<void> {
  let frame: AudioFrame;
  try {
    frame = decodeAudioFrame(data, driver.session.encoding.name, driver.session.maxFramePayloadBytes);
  } catch (err) {
    return driver.refuse(err, 'audio');
  }
  return driver.audio(frame);
}

/** One text message: a control object, or its refusal. */
export function nativeText(driver: SessionDriver, text: string): Promise<void> {
  let msg: ControlMessage;
  try {
    msg = parseControlMessage(text);
  } catch (err) {
    return driver.refuse(err, 'control');
  }
  switch (msg.type) {
    case 'ping':
      return driver.ping(msg.id);
    case 'commit':
      return driver.commit();
    case 'close':
      return driver.close();
  }
}
