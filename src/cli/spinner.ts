/** The one-line spinner the CLI draws while a person waits on a terminal (nothing elsewhere). */
import type { Output } from "./output";

const SPINNER_FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const SPINNER_INTERVAL_MS = 100;

/** A one-line spinner on a terminal; does nothing elsewhere. */
export class Spinner {
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private label = "";

  constructor(private readonly output: Output) {}

  start(label: string): void {
    if (!this.output.isTTY) return;
    this.label = label;
    if (this.timer) return;
    this.timer = setInterval(() => this.draw(), SPINNER_INTERVAL_MS);
    this.draw();
  }

  /** Clears the spinner line so that other output can be written. */
  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.output.write("\r\x1b[K");
  }

  private draw(): void {
    this.frame = (this.frame + 1) % SPINNER_FRAMES.length;
    this.output.write(`\r\x1b[K${SPINNER_FRAMES[this.frame]} ${this.label}`);
  }
}
