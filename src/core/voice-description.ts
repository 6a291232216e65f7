// From a free-text voice description to espeak-ng parameters: the words of the description
// pick the accent (language voice), gender/age variant, pitch, speed and loudness. Pure and
// deterministic: the same description always gives the same voice. Words that say nothing
// about the voice leave the defaults (en-us, male variant, pitch 50, 165 wpm).
export interface EspeakParams {
  /** espeak-ng voice: language plus `+variant`. */
  voice: string;
  /** 0-99, 50 is the voice's normal pitch. */
  pitch: number;
  /** Words per minute, 80-450. */
  speed: number;
  /** 0-200, 100 normal. */
  amplitude: number;
  /** Extra pause between words in units of 10 ms. */
  wordGap: number;
  /** Which description words decided what (shown in the design, for the caller). */
  matched: string[];
}

const ACCENTS: [RegExp, string][] = [
  [/\b(scottish|scotland)\b/, 'en-gb-scotland'],
  [/\b(british|english accent|london|uk|received pronunciation|rp)\b/, 'en-gb'],
  [/\b(american|us accent|usa)\b/, 'en-us'],
  [/\b(caribbean|jamaican)\b/, 'en-029'],
  [/\b(indian)\b/, 'en-gb-x-rp'],
];

const NUDGES: [RegExp, Partial<Record<'pitch' | 'speed' | 'amplitude' | 'wordGap', number>>][] = [
  [/\b(deep|low|bass|baritone|gravelly)\b/, { pitch: -22 }],
  [/\b(high|high-pitched|squeaky|bright)\b/, { pitch: 20 }],
  [/\b(child|kid|young girl|young boy)\b/, { pitch: 25, speed: 10 }],
  [/\b(old|elderly|aged)\b/, { pitch: -8, speed: -25 }],
  [/\b(fast|quick|rapid|energetic|excited)\b/, { speed: 45 }],
  [/\b(slow|calm|relaxed|soothing|measured)\b/, { speed: -35, wordGap: 1 }],
  [/\b(loud|booming|powerful)\b/, { amplitude: 40 }],
  [/\b(soft|quiet|gentle|whisper|whispering)\b/, { amplitude: -40 }],
  [/\b(dramatic|narrator|storyteller)\b/, { wordGap: 2, speed: -10 }],
];

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.round(v)));

export function describeToEspeak(description: string): EspeakParams {
  const text = description.toLowerCase();
  const matched: string[] = [];
  let language = 'en-us';
  for (const [re, lang] of ACCENTS) {
    const m = re.exec(text);
    if (m) {
      language = lang;
      matched.push(m[0]);
      break;
    }
  }
  const female = /\b(female|woman|women|girl|feminine|lady|she)\b/.exec(text);
  const male = /\b(male|man|men|boy|masculine|gentleman|he)\b/.exec(text);
  const elderly = /\b(old|elderly|aged)\b/.test(text);
  let variant = 'm3';
  if (female && (!male || female.index < male.index)) {
    variant = elderly ? 'f4' : 'f3';
    matched.push(female[0]);
  } else if (male) {
    variant = elderly ? 'm7' : 'm3';
    matched.push(male[0]);
  }
  let pitch = variant.startsWith('f') ? 55 : 45;
  let speed = 165;
  let amplitude = 100;
  let wordGap = 0;
  for (const [re, d] of NUDGES) {
    const m = re.exec(text);
    if (!m) continue;
    matched.push(m[0]);
    pitch += d.pitch ?? 0;
    speed += d.speed ?? 0;
    amplitude += d.amplitude ?? 0;
    wordGap += d.wordGap ?? 0;
  }
  return {
    voice: `${language}+${variant}`,
    pitch: clamp(pitch, 0, 99),
    speed: clamp(speed, 80, 450),
    amplitude: clamp(amplitude, 0, 200),
    wordGap: clamp(wordGap, 0, 20),
    matched,
  };
}
