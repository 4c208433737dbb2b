import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { DATABASES } from '../../helpers/database.js';
import { startBilling, type BillingHarness } from '../../helpers/billing.js';

describe.each(DATABASES)('billing run: a saved card expiring before the next renewal (%s)', (kind) => {
  let h: BillingHarness;
  beforeEach(async () => {
    h = await startBilling(kind);
  });
  afterEach(async () => {
    await h.stop();
  });

  it('warns the customer once per card, in advance; a new card that expires too is warned about again', async () => {
    const user = await h.user();
    const sub = await h.subscribe(user, 'pro-monthly', 'credit_card', 'sim-card-accept-4811');
    const stored = await h.sub(sub.id);
    expect(stored.cardToken).toMatch(/^sim-card-accept/);
    // Three years of validity from the simulator: nothing to say.
    expect((await h.run()).card_notices).toBe(0);

    const em = h.server.running.billing.orm.em.fork();
    await em.nativeUpdate(Subscription, { id: sub.id }, { cardTokenExpiresAt: new Date(stored.nextBillingDate!.getTime() - 24 * 3600 * 1000) });
    expect(await h.run({ dryRun: true })).toMatchObject({ card_notices: 1 });
    expect(await h.notifications(user)).not.toContain('card_expiring');
    expect(await h.run()).toMatchObject({ card_notices: 1, errors: [] });
    expect((await h.notifications(user)).filter((n) => n === 'card_expiring')).toHaveLength(1);
    expect((await h.run()).card_notices).toBe(0);

    await em.nativeUpdate(Subscription, { id: sub.id }, { cardToken: 'sim-card-accept-another' });
    expect((await h.run()).card_notices).toBe(1);
    expect((await h.notifications(user)).filter((n) => n === 'card_expiring')).toHaveLength(2);
  });
});
