import type { IntervalWord, LineLabels } from './line-labels.js';

const UNITS: Record<IntervalWord, string> = { day: 'hari', week: 'minggu', month: 'bulan', year: 'tahun' };

export const LINES_ID_ID: LineLabels = {
  firstPeriod: (plan, count, unit) => `${plan} (${count} ${UNITS[unit]} pertama)`,
  period: (plan, start, end) => `${plan} (${start} s.d. ${end})`,
  unusedTime: (plan) => `Sisa waktu ${plan} yang tidak terpakai`,
  remainingTime: (plan) => `Sisa waktu pada ${plan}`,
  newPeriod: (plan) => `${plan} (periode baru)`,
  refund: (refund, order, invoice) => `Pengembalian dana ${refund} atas pembayaran ${order} (tagihan ${invoice})`,
  chargeback: (order, invoice, total) => `Chargeback pembayaran ${order} oleh penerbit kartu (tagihan ${invoice}), seluruhnya ${total}`,
};
