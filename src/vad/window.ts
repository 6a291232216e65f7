// The detector's fixed window: Silero VAD judges 512 samples of 16 kHz audio at a time.
export const VAD_RATE = 16_000;
export const VAD_WINDOW_SAMPLES = 512;
export const VAD_WINDOW_MS = (VAD_WINDOW_SAMPLES / VAD_RATE) * 1000;
