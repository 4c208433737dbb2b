import { GatewayError } from '../../src/gateway/errors.js';

/** The GatewayError a gateway call rejects with; anything else it throws, or a success, fails the test. */
export async function gatewayFailure(p: Promise<unknown>): Promise<GatewayError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  throw new Error('expected a GatewayError');
}
