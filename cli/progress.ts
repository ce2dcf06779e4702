/**
 * A progress bar for people: one line on stderr, redrawn in place, and only when stderr is a
 * terminal (a pipe or a log file gets nothing from it; the command's own lines say what happened).
 * Other output to the same terminal goes through `above()`, which clears the bar, prints and
 * redraws it, so that the two never mix on one line.
 */

/** `[#####.....]`: `done` of `total` as `width` cells. */
export function progressBar(done: number, total: number, width = 24): string {
  const filled = total <= 0 ? width : Math.min(width, Math.floor((done / total) * width));
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}]`;
}

/** The stream a progress line is drawn on: process.stderr, or a test's stand-in. */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export class ProgressLine {
  /** Whether anything is drawn: a terminal, and enabled. */
  readonly live: boolean;
  private shown = "";

  constructor(
    private readonly stream: ProgressStream = process.stderr,
    /** False draws nothing at all (JSON mode: stderr is kept for the error object). */
    enabled = true,
  ) {
    this.live = enabled && stream.isTTY === true;
  }

  /** Draws `text` in place of the previous one, cut to the terminal's width. */
  update(text: string): void {
    if (!this.live) return;
    this.shown = text.slice(0, Math.max(20, (this.stream.columns || 120) - 1));
    this.stream.write(`\r\x1b[2K${this.shown}`);
  }

  /** Prints through `print` with the bar out of the way, then draws it again. */
  above(print: () => void): void {
    if (this.live && this.shown !== "") this.stream.write("\r\x1b[2K");
    print();
    if (this.live && this.shown !== "") this.stream.write(this.shown);
  }

  /** Removes the bar for good (the command ends). */
  clear(): void {
    if (this.live && this.shown !== "") this.stream.write("\r\x1b[2K");
    this.shown = "";
  }
}
