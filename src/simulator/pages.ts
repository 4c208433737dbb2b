import type { SimTransaction } from './types.js';

function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A stand-in QR image: a deterministic pixel pattern plus the order id, not a scannable code. */
export function qrSvg(tx: SimTransaction): string {
  const cells: string[] = [];
  const seed = tx.transaction_id.replace(/-/g, '');
  for (let i = 0; i < 21 * 21; i++) {
    const nibble = parseInt(seed[i % seed.length]!, 16);
    if ((nibble >> (i % 4)) & 1) cells.push(`<rect x="${(i % 21) * 8}" y="${Math.floor(i / 21) * 8}" width="8" height="8"/>`);
  }
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="168" height="188" viewBox="0 0 168 188">` +
    `<rect width="168" height="188" fill="#fff"/><g fill="#000">${cells.join('')}</g>` +
    `<text x="84" y="182" font-size="9" text-anchor="middle">${escapeXml(tx.order_id)}</text></svg>`
  );
}

/**
 * The page a 3-D Secure redirect_url opens. Its two forms post back to the same URL with
 * result=authenticate or result=fail, as the customer's bank page would report the outcome.
 */
export function threeDsPage(tx: SimTransaction): string {
  const button = (result: string, label: string) =>
    `<form method="post"><input type="hidden" name="result" value="${result}"><button type="submit" name="submit" value="${result}">${label}</button></form>`;
  const open = tx.transaction_status === 'pending' && tx.card?.redirect_url != null;
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>3-D Secure (simulator)</title></head><body>` +
    `<h1>3-D Secure</h1><p>Order ${escapeXml(tx.order_id)}, IDR ${tx.gross_amount}, status ${escapeXml(tx.transaction_status)}</p>` +
    (open ? button('authenticate', 'Authenticate') + button('fail', 'Fail authentication') : '<p>Nothing left to authenticate.</p>') +
    `</body></html>`
  );
}

/** What the bank page shows after the customer answered. */
export function threeDsDone(tx: SimTransaction): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>3-D Secure (simulator)</title></head><body>` +
    `<h1>3-D Secure finished</h1><p id="result" data-transaction-status="${escapeXml(tx.transaction_status)}">Order ${escapeXml(tx.order_id)} is ${escapeXml(tx.transaction_status)}</p>` +
    `</body></html>`
  );
}
