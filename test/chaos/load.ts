/**
 * The machine's load while a chaos run plays: the 1-minute load average sampled at an interval.
 * A chaos run's timing depends on what else the machine runs; the report shows it so that a
 * result measured on a busy machine says so.
 */
import { loadavg } from "node:os";

export interface LoadFigures {
  /** Samples of the 1-minute load average. */
  samples: number;
  mean: number;
  max: number;
}

/** Mean and max of `samples` (1-minute load averages); zeros when there is none. */
export function loadFigures(samples: readonly number[]): LoadFigures {
  if (samples.length === 0) return { samples: 0, mean: 0, max: 0 };
  const round = (value: number) => Math.round(value * 100) / 100;
  const sum = samples.reduce((total, value) => total + value, 0);
  return { samples: samples.length, mean: round(sum / samples.length), max: round(Math.max(...samples)) };
}

/** Starts sampling now (one sample at once, then every `intervalMs`); `stop` ends it and sums up. */
export function sampleLoad(intervalMs: number): { stop(): LoadFigures } {
  const samples = [loadavg()[0] ?? 0];
  const timer = setInterval(() => samples.push(loadavg()[0] ?? 0), intervalMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      return loadFigures(samples);
    },
  };
}
