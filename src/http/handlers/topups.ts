import { createTopup } from '../../services/topups/create-topup.js';
import { getTopup } from '../../services/topups/get-topup.js';
import { listTopups } from '../../services/topups/list-topups.js';
import { requireUser, type OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';
import { serializeTopup } from '../serializers.js';

export const topupHandlers: OperationHandlers = {
  async listTopups(req) {
    const page = pageRequest(req.query);
    const result = await listTopups(req.services, requireUser(req), { status: req.query.status, paymentType: req.query.payment_type }, page);
    return { status: 200, body: envelope(req.koa, result, page, serializeTopup) };
  },

  async createTopup(req) {
    const { amount, payment_type, bank, token } = req.body;
    const topup = await createTopup(req.services, requireUser(req), { amount, paymentType: payment_type, bank, token });
    return { status: 201, body: serializeTopup(topup) };
  },

  async getTopup(req) {
    return { status: 200, body: serializeTopup(await getTopup(req.services, requireUser(req), req.path.id)) };
  },
};
