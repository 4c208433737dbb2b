import { request } from 'node:http';
import type { RunningServer } from '../../src/server.js';

/** An answer as the wire carried it: status, headers and the body's text. */
export interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * One request by node's own client, headers exactly as given and a fixed Host (the page links
 * of a list name it, and two servers compared listen on different ports).
 */
export function sendRaw(server: RunningServer, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<Raw> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers: { host: 'billing.test', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
