/**
 * Completes a 3-D Secure redirect_url the way a customer's browser does: opens the page, then
 * submits its form with result=authenticate or result=fail. Resolves with the transaction_status
 * the page reports afterwards. Works against any server that mounts the simulator.
 */
export async function completeThreeDs(redirectUrl: string, result: 'authenticate' | 'fail' = 'authenticate'): Promise<string> {
  const page = await fetch(redirectUrl);
  const html = await page.text();
  if (page.status !== 200 || !html.includes(`value="${result}"`)) throw new Error(`3-D Secure page ${redirectUrl}: ${page.status} ${html.slice(0, 200)}`);
  const done = await fetch(redirectUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ result }).toString(),
  });
  const text = await done.text();
  if (done.status !== 200) throw new Error(`3-D Secure ${result} at ${redirectUrl}: ${done.status} ${text}`);
  const status = /data-transaction-status="([a-z_]+)"/.exec(text);
  if (!status) throw new Error(`3-D Secure page did not report a status: ${text.slice(0, 200)}`);
  return status[1]!;
}
