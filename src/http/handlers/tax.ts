import { getTaxProfile, saveTaxProfile } from '../../services/users/tax-profile.js';
import { requireUserId, type OperationHandlers } from '../operations.js';

export const taxHandlers: OperationHandlers = {
  async getTaxProfile(req) {
    return { status: 200, body: await getTaxProfile(req.services, requireUserId(req)) };
  },

  async putTaxProfile(req) {
    return { status: 200, body: await saveTaxProfile(req.services, requireUserId(req), req.body) };
  },
};
