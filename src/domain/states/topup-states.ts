import type { Topup, TopupStatus } from '../../db/entities/topup.js';
import { StateMachine } from './state-machine.js';

export type TopupEvent = 'succeed' | 'fail' | 'expire' | 'reverse' | 'charge_back';

/**
 * A top-up's statuses, with one move worth saying: a settlement that arrives after a failure or
 * expiry still succeeds, because the money did arrive and must reach the wallet.
 */
export const topupStates = new StateMachine<TopupStatus, TopupEvent, Topup>('top-up', {
  succeed: { from: ['pending', 'failed', 'expired'], to: 'success', stamp: (t, at) => (t.paidAt ??= at) },
  fail: { from: ['pending'], to: 'failed' },
  expire: { from: ['pending'], to: 'expired' },
  // A deny or cancel after settlement: the gateway took the money back.
  reverse: { from: ['success'], to: 'reversed' },
  // The card's issuer took all that was left back (docs/gateway.md, 'Chargebacks').
  charge_back: { from: ['success'], to: 'charged_back' },
});
