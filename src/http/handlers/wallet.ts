import { listWalletTransactions } from '../../services/wallet/list-wallet-transactions.js';
import { readWallet } from '../../services/wallet/wallet-ledger.js';
import { requireUser, type OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';
import { serializeWallet, serializeWalletTransaction } from '../serializers.js';

export const walletHandlers: OperationHandlers = {
  async getMyWallet(req) {
    return { status: 200, body: serializeWallet(await readWallet(req.services, requireUser(req))) };
  },

  async listWalletTransactions(req) {
    const page = pageRequest(req.query);
    const result = await listWalletTransactions(req.services, requireUser(req), page);
    return { status: 200, body: envelope(req.koa, result, page, serializeWalletTransaction) };
  },
};
