// Text helpers: ANSI removal, trimming with a visible marker, and a bounded
// accumulator for streamed output.

// CSI sequences (colors, cursor moves), OSC sequences (titles, links) and lone ESC pairs.
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** The marker that stands where text was cut. */
export function trimMarker(removedChars: number): string {
  return `\n[... ${removedChars} characters trimmed ...]\n`;
}

/**
 * Keeps at most `maxChars` characters: the head and the tail, with a marker
 * between them naming how much was cut. Returns the text and whether it was cut.
 */
export function trimMiddle(text: string, maxChars: number): { text: string; trimmed: boolean } {
  if (text.length <= maxChars) return { text, trimmed: false };
  const head = Math.floor(maxChars * 0.4);
  const tail = maxChars - head;
  const removed = text.length - head - tail;
  return { text: text.slice(0, head) + trimMarker(removed) + text.slice(text.length - tail), trimmed: true };
}

/** Keeps the last `maxChars` characters (tracebacks end with what matters). */
export function trimHead(text: string, maxChars: number): { text: string; trimmed: boolean } {
  if (text.length <= maxChars) return { text, trimmed: false };
  const removed = text.length - maxChars;
  return { text: `[... ${removed} characters trimmed ...]\n` + text.slice(removed), trimmed: true };
}

/**
 * Accumulates streamed text up to a cap: the first half of the cap is kept as
 * it came, the rest is a rolling tail; what falls between is counted.
 */
export class CappedText {
  private head_ = '';
  private tail_ = '';
  private dropped_ = 0;

  constructor(private readonly maxChars: number) {}

  append(chunk: string): void {
    const headRoom = Math.floor(this.maxChars / 2) - this.head_.length;
    if (headRoom > 0) {
      this.head_ += chunk.slice(0, headRoom);
      chunk = chunk.slice(headRoom);
      if (!chunk) return;
    }
    this.tail_ += chunk;
    const tailMax = this.maxChars - Math.floor(this.maxChars / 2);
    if (this.tail_.length > tailMax) {
      this.dropped_ += this.tail_.length - tailMax;
      this.tail_ = this.tail_.slice(this.tail_.length - tailMax);
    }
  }

  clear(): void {
    this.head_ = '';
    this.tail_ = '';
    this.dropped_ = 0;
  }

  get truncated(): boolean {
    return this.dropped_ > 0;
  }

  toString(): string {
    return this.dropped_ > 0 ? this.head_ + trimMarker(this.dropped_) + this.tail_ : this.head_ + this.tail_;
  }
}
