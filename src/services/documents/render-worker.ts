import { setPriority } from 'node:os';
import { move } from 'piscina';
import type { DocumentView } from './document-view.js';
import { renderDocumentPdf } from './template.js';

/**
 * The entry of a render worker thread (src/services/documents/render-pool.ts): a document's
 * view in, its PDF bytes out. It receives plain data only (no entity, no database connection);
 * pdfkit and the fonts load on the thread's first document and stay for the next ones.
 */
/**
 * The render threads yield the CPU to the event loop: on Linux a thread has a niceness of its
 * own, and 10 makes a render wait while the server's main thread has requests to answer. (On
 * other systems the call would lower the whole process, so it is not made there.)
 */
if (process.platform === 'linux') {
  try {
    setPriority(10);
  } catch {
    // Not allowed here: the thread renders at the usual priority.
  }
}

export default async function renderInWorker(view: DocumentView): Promise<Uint8Array> {
  const pdf = await renderDocumentPdf(view);
  // Moved to the main thread, not copied; a buffer inside Node's shared pool is copied out first.
  const bytes = pdf.byteOffset === 0 && pdf.byteLength === pdf.buffer.byteLength ? new Uint8Array(pdf.buffer) : new Uint8Array(pdf);
  return move(bytes) as Uint8Array;
}
