/**
 * Rendered PDFs kept by their document's version, least recently used dropped first, bounded in
 * bytes: a document asked for many times is rendered once while it does not change.
 */
export class RenderedDocumentCache {
  /** Insertion order is recency order: a hit moves its entry to the end. */
  private readonly entries = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(key: string): Buffer | null {
    const pdf = this.entries.get(key);
    if (!pdf) return null;
    this.entries.delete(key);
    this.entries.set(key, pdf);
    return pdf;
  }

  set(key: string, pdf: Buffer): void {
    // A document larger than the whole cache would only push everything else out.
    if (pdf.length > this.maxBytes) return;
    const previous = this.entries.get(key);
    if (previous) {
      this.bytes -= previous.length;
      this.entries.delete(key);
    }
    this.entries.set(key, pdf);
    this.bytes += pdf.length;
    for (const [oldest, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= old.length;
    }
  }

  get size(): { documents: number; bytes: number } {
    return { documents: this.entries.size, bytes: this.bytes };
  }
}
