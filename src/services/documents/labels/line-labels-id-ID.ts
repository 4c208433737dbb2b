import type { IntervalWord, LineLabels } from './line-labels.js';

const UNITS: Record<IntervalWord, string> = { day: 'hari', week: 'minggu', month: 'bulan', year: 'tahun' };

export const LINES_ID_ID: LineLabels = {
  firstPeriod: (plan, count, unit) => `${plan} (${count} ${UNITS[unit]} pertama)`,
  period: (plan, start, end) => `${plan} (${start} s.d. ${end})`,
  unusedTime: (plan) => `Sisa waktu ${plan} yang tidak terpakai`,
  unusedTimeMoved: (plan, to) => `Sisa waktu ${plan} yang tidak terpakai setelah pindah ke ${to}`,
  remainingTime: (plan) => `Sisa waktu pada ${plan}`,
  usage: (metric, units) => `Pemakaian ${metric}: ${units}`,
  newPeriod: (plan) => `${plan} (periode baru)`,
  during: (words, start, end) => `${words}, ${start} s.d. ${end}`,
  refund: (refund, order, invoice) => `Pengembalian dana ${refund} atas pembayaran ${order} (tagihan ${invoice})`,
  unusableSettlement: (order, invoice, why) => `Pembayaran ${order} tidak dapat digunakan${why ? ` (${why})` : ''} (tagihan ${invoice}): dikreditkan ke dompet`,
  periodPassed: (order, invoice, start, end) => `Pembayaran ${order} diterima setelah periode ${start} s.d. ${end} berakhir (tagihan ${invoice}): dikreditkan ke dompet`,
  supportCredit: 'Kredit dari tim dukungan',
  supportDebit: 'Debit oleh tim dukungan',
  unusableWhy: {
    invoice_already_paid: 'tagihannya sudah dibayar',
    invoice_void: 'tagihannya sudah dibatalkan',
    subscription_ended: 'langganannya sudah berakhir',
    plan_change_dropped: 'perubahan paketnya dibatalkan',
    topup_canceled: 'isi saldonya dibatalkan',
    period_passed: 'periodenya sudah berakhir',
  },
  chargeback: (order, invoice, total) => `Chargeback pembayaran ${order} oleh penerbit kartu (tagihan ${invoice}), seluruhnya ${total}`,
};
