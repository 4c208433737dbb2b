import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { signWebhookBody, verifyWebhookSignature } from '../../../src/services/delivery/webhook-signature.js';

// The worked example of docs/delivery.md.
const SECRET = 'whsec_3xAmPl3_n0t_a_r3al_s3cr3t';
const T = 1795341600;
const BODY =
  '{"id":"3f2b6c1e-8a4d-4b7e-9c2f-5d1a0e7b9c44","type":"payment_succeeded","created_at":"2026-11-22T10:00:00.000Z","data":{"payment_id":"0b7c4f6e-2d0a-4c55-8d7e-1f2a3b4c5d6e","order_id":"SUB-8QZ1X2Y3","amount":"150000.00","currency":"IDR","payment_type":"bank_transfer","bank":"bca","va_number":"12345678901"}}';
const HEADER = 't=1795341600,v1=e9c80d9f18171d5de996b9db925d6c11ff193cc8acbd826c85634b1935d65f1b';
const DOC = readFileSync(new URL('../../../docs/delivery.md', import.meta.url), 'utf8');

describe('outbound webhook signatures', () => {
  afterEach(() => vi.useRealTimers());

  it('signs the worked example of docs/delivery.md to the header the document shows', () => {
    expect(createHmac('sha256', SECRET).update(`${T}.${BODY}`).digest('hex')).toBe(HEADER.split('v1=')[1]);
    expect(signWebhookBody(SECRET, T, BODY)).toBe(HEADER);
    for (const value of [SECRET, String(T), BODY, HEADER]) expect(DOC).toContain(value);
  });

  it('verifies the example and refuses a changed body, another secret, an old timestamp and junk', () => {
    const at = { nowSeconds: T + 60 };
    expect(verifyWebhookSignature(SECRET, HEADER, BODY, at)).toBe(true);
    expect(verifyWebhookSignature(SECRET, HEADER, BODY.replace('150000.00', '1.00'), at)).toBe(false);
    expect(verifyWebhookSignature('another secret', HEADER, BODY, at)).toBe(false);
    expect(verifyWebhookSignature(SECRET, HEADER, BODY, { nowSeconds: T + 301 })).toBe(false);
    expect(verifyWebhookSignature(SECRET, HEADER.replace('t=1795341600', 't=1795341601'), BODY, at)).toBe(false);
    for (const junk of ['', 'v1=abc', 't=x,v1=00', 't=1795341600', null]) expect(verifyWebhookSignature(SECRET, junk, BODY, at)).toBe(false);
  });

  it('the Node.js receiver code printed in docs/delivery.md accepts the example and refuses a tampered body', async () => {
    const code = /```js\n([\s\S]*?)```/.exec(DOC)![1];
    const module = await import(`data:text/javascript,${encodeURIComponent(`${code}\nexport { verifyBillingSignature };`)}`);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date((T + 30) * 1000));
    expect(module.verifyBillingSignature(SECRET, HEADER, BODY)).toBe(true);
    expect(module.verifyBillingSignature(SECRET, HEADER, `${BODY} `)).toBe(false);
    vi.setSystemTime(new Date((T + 3600) * 1000));
    expect(module.verifyBillingSignature(SECRET, HEADER, BODY)).toBe(false);
  });
});
