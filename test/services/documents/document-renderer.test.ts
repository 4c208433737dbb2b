import { describe, expect, it } from 'vitest';
import type { DocumentView } from '../../../src/services/documents/document-view.js';
import { DocumentRenderer, RenderRefusedError, type RefusalReason } from '../../../src/services/documents/document-renderer.js';

/*
 * The limits, the single flight and the cache in front of the worker pool, with renders that
 * finish when the test says: the pool itself runs in test/http/invoice-pdf-flood.test.ts.
 */

const view = (number: string): DocumentView => ({
  title: 'Invoice', number, issuedAt: new Date('2026-11-01T00:00:00Z'),
  seller: { heading: 'From', name: 'PT Contoh', lines: [], logoPath: null }, customer: { heading: 'Bill to', name: 'Siti', lines: [] },
  facts: [], stamp: null, lines: [], totals: [], sections: [], footer: [],
  layout: { columns: { description: 'Description', quantity: 'Qty', unitPrice: 'Unit price', amount: 'Amount' }, page: 'Page {page} of {pages}' },
});

function heldRenders() {
  const held: { number: string; finish: () => void; fail: () => void }[] = [];
  const render = (v: DocumentView) =>
    new Promise<Buffer>((resolve, reject) => held.push({ number: v.number, finish: () => resolve(Buffer.from(`%PDF-${v.number}`)), fail: () => reject(new Error('worker died')) }));
  return { held, render };
}

function counting() {
  const counts = { rendered: 0, hits: 0, refused: [] as RefusalReason[] };
  return { counts, observer: { documentRendered: () => void counts.rendered++, documentCacheHit: () => void counts.hits++, documentRefused: (r: RefusalReason) => void counts.refused.push(r) } };
}

/** Lets a request that was just asked for get past its counting to its work. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const refusal = async (promise: Promise<unknown>) => {
  const err = await promise.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(RenderRefusedError);
  return err as RenderRefusedError;
};

describe('DocumentRenderer', () => {
  it("when a user has as many PDF requests under way as the limit: the next is refused 429 at once, another user's is not", async () => {
    const { held, render } = heldRenders();
    const { counts, observer } = counting();
    const renderer = new DocumentRenderer(render, { perUser: 2, perUserPerSecond: 1000, total: 10, cacheBytes: 1024 }, observer);
    const ask = (user: string, number: string) => renderer.forUser(user, () => renderer.render(view(number)));
    const first = [ask('u1', 'A'), ask('u1', 'B')];
    let started = false;
    const refused = await refusal(renderer.forUser('u1', async () => void (started = true)));
    expect(started).toBe(false);
    expect(refused.code).toBe('rate_limited');
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(held.map((h) => h.number)).toEqual(['A', 'B']);
    const theirs = ask('u2', 'D');
    await settle();
    expect(held).toHaveLength(3);

    for (const h of held) h.finish();
    await Promise.all([...first, theirs]);
    // The slots are free again.
    const again = ask('u1', 'C');
    await settle();
    held.at(-1)!.finish();
    expect((await again).toString()).toBe('%PDF-C');
    expect(counts).toEqual({ rendered: 4, hits: 0, refused: ['user_limit'] });
  });

  it('when a user has started as many PDF requests in a second as the limit, cached answers included: the next is refused 429, another user\'s is not, and the next second serves again', async () => {
    const { held, render } = heldRenders();
    const { counts, observer } = counting();
    const renderer = new DocumentRenderer(render, { perUser: 10, perUserPerSecond: 3, total: 10, cacheBytes: 1024 }, observer);
    const ask = (user: string) => renderer.forUser(user, () => renderer.render(view('A')));
    const rendering = ask('u1');
    await settle();
    held[0].finish();
    await rendering;
    // Each answered from the cache at once, none under way alongside another.
    await ask('u1');
    await ask('u1');
    const refused = await refusal(ask('u1'));
    expect(refused.code).toBe('rate_limited');
    expect(refused.retryAfterSeconds).toBe(1);
    expect((await ask('u2')).toString()).toBe('%PDF-A');
    expect(counts).toEqual({ rendered: 1, hits: 3, refused: ['user_limit'] });
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    expect((await ask('u1')).toString()).toBe('%PDF-A');
  });

  it('when the renders under way reach the total: the next is refused 503', async () => {
    const { held, render } = heldRenders();
    const renderer = new DocumentRenderer(render, { perUser: 5, perUserPerSecond: 1000, total: 3, cacheBytes: 1024 });
    const under = ['A', 'B', 'C'].map((n) => renderer.render(view(n)));
    const refused = await refusal(renderer.render(view('D')));
    expect(refused.code).toBe('service_unavailable');
    for (const h of held) h.finish();
    await Promise.all(under);
  });

  it('the same version asked for while it renders, and after, is rendered once', async () => {
    const { held, render } = heldRenders();
    const { counts, observer } = counting();
    const renderer = new DocumentRenderer(render, { perUser: 1, perUserPerSecond: 1000, total: 1, cacheBytes: 1024 }, observer);
    const waiting = Array.from({ length: 5 }, () => renderer.render(view('A')));
    expect(held).toHaveLength(1);
    held[0].finish();
    const answers = await Promise.all(waiting);
    expect(answers.every((a) => a.toString() === '%PDF-A')).toBe(true);
    expect((await renderer.render(view('A'))).toString()).toBe('%PDF-A');
    // A changed document is another version.
    const changed = renderer.render({ ...view('A'), stamp: { text: 'PAID', tone: 'good' } });
    expect(held).toHaveLength(2);
    held[1].finish();
    await changed;
    expect(counts).toEqual({ rendered: 2, hits: 5, refused: [] });
  });

  it('a render that fails frees its slots and is not cached', async () => {
    const { held, render } = heldRenders();
    const renderer = new DocumentRenderer(render, { perUser: 1, perUserPerSecond: 1000, total: 1, cacheBytes: 1024 });
    const failing = renderer.forUser('u1', () => renderer.render(view('A')));
    await settle();
    held[0].fail();
    await expect(failing).rejects.toThrow('worker died');
    const retried = renderer.forUser('u1', () => renderer.render(view('A')));
    await settle();
    expect(held).toHaveLength(2);
    held[1].finish();
    expect((await retried).toString()).toBe('%PDF-A');
  });

  it('keeps at most cacheBytes of PDFs, dropping the least recently used', async () => {
    const { held, render } = heldRenders();
    const renderer = new DocumentRenderer(render, { perUser: 10, perUserPerSecond: 1000, total: 10, cacheBytes: 20 });
    const ask = async (n: string) => {
      const before = held.length;
      const answer = renderer.render(view(n));
      if (held.length > before) held.at(-1)!.finish();
      return answer;
    };
    await ask('A1'); // 7 bytes each: %PDF-A1
    await ask('B1');
    await ask('A1'); // A1 is now the most recent
    await ask('C1'); // 21 bytes: B1 goes
    expect(held.map((h) => h.number)).toEqual(['A1', 'B1', 'C1']);
    await ask('A1');
    await ask('B1');
    expect(held.map((h) => h.number)).toEqual(['A1', 'B1', 'C1', 'B1']);
  });
});
