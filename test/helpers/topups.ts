import { expect } from 'vitest';
import type { Credentials, TestServer } from './server.js';

/** A simulator command over real HTTP; it notifies the webhook and answers after the first attempt. */
export async function simulate(server: TestServer, orderId: string, action: string, body: unknown = {}) {
  const res = await server.request<{ transaction_status: string; notification: { http_status: number | null; error: string | null } }>(
    'POST',
    `/_simulator/v2/${encodeURIComponent(orderId)}/${action}`,
    { body },
  );
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** Pays a pending top-up at the gateway; the webhook must have processed the notification. */
export async function settleTopup(server: TestServer, orderId: string): Promise<void> {
  const result = await simulate(server, orderId, 'settle');
  expect(result.notification.http_status, JSON.stringify(result.notification)).toBe(200);
}

/** Waits until the simulator's notification of `status` for the order got an answer from the webhook. */
export async function waitForNotification(server: TestServer, orderId: string, status: string): Promise<number | null> {
  for (let i = 0; i < 200; i++) {
    const delivered = server.running.billing.simulator!
      .deliveries()
      .find((d) => d.order_id === orderId && d.transaction_status === status && (d.http_status !== null || d.error !== null));
    if (delivered) return delivered.http_status;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no ${status} notification for ${orderId} was answered`);
}

export async function postTopup(server: TestServer, auth: Credentials, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return server.api('POST', '/topups/', { auth, body, headers });
}

export async function walletBalance(server: TestServer, auth: Credentials): Promise<string> {
  const res = await server.api('GET', '/wallet/me/', { auth });
  expect(res.status).toBe(200);
  return res.body.balance;
}

/** How many Core API charge calls the simulator has received. */
export function chargeCount(server: TestServer): number {
  return server.running.billing.simulator!.requests().filter((r) => r.operation === 'charge').length;
}
