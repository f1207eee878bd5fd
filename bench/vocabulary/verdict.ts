// bench:vocabulary's verdicts: the reload's longest hold of the event loop under 50 ms, and the
// tree it builds answering every probe as the tree built the way before does. Apart from the run
// so a test can show each failing; a run that reloaded nothing, or whose probes reached no word,
// fails (it would have compared nothing).

export const HOLD_TARGET_MS = 50;

export interface VocabularyFigures {
  /** The longest hold of each reload measured (ms). */
  holdsMs: readonly number[];
  probes: number;
  /** Probes answered differently by the two trees. */
  differ: number;
  /** Probes for which the reference tree found at least one near word. */
  reached: number;
}

export interface Verdict {
  name: string;
  figure: string;
  pass: boolean;
}

export function vocabularyVerdicts(f: VocabularyFigures): Verdict[] {
  const longest = f.holdsMs.length > 0 ? Math.max(...f.holdsMs) : NaN;
  return [
    {
      name: `the reload's longest event-loop hold under ${HOLD_TARGET_MS} ms`,
      figure: f.holdsMs.length > 0 ? `${longest.toFixed(1)} ms (${f.holdsMs.length} reloads)` : 'no reload measured',
      pass: Number.isFinite(longest) && longest < HOLD_TARGET_MS,
    },
    {
      name: 'both trees answer every probe alike',
      figure: `${f.differ} of ${f.probes} differ (${f.reached} reached a word)`,
      pass: f.probes > 0 && f.reached > 0 && f.differ === 0,
    },
  ];
}
