import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { DocumentSection, DocumentView } from './document-view.js';

/**
 * The one layout of every document (invoice, credit note): change the look here. It takes a
 * DocumentView whose text is already formatted and in its language (even the column headings
 * and the page number come with it), and knows nothing of invoices, money or words.
 *
 * A4, from the top: the seller's logo (or name as a wordmark) with the title, number and a
 * status stamp; the seller's details beside the document's dates; the customer; the table of
 * lines; the totals; the payment, refunds and credit notes; small print at the foot.
 */

// Resolved through Node's resolver rather than a path relative to this file, so that the same
// code finds the fonts from src/ under tsx and from the esbuild bundle (packages stay external).
const require = createRequire(import.meta.url);
const FONT_PATHS = {
  regular: require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf'),
  bold: require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf'),
};

/**
 * Files a document embeds (the fonts, the logo), read once per thread: each render worker, and
 * the process when it renders in-process (the CLI), reads them on its first document only.
 */
const fileBytes = new Map<string, Buffer>();
function readOnce(path: string): Buffer {
  let bytes = fileBytes.get(path);
  if (!bytes) fileBytes.set(path, (bytes = readFileSync(path)));
  return bytes;
}

const PAGE = { width: 595.28, height: 841.89, margin: 50 };
const CONTENT_WIDTH = PAGE.width - 2 * PAGE.margin;
const COLOURS = {
  text: '#1f2933',
  muted: '#6b7280',
  accent: '#0b5cad',
  rule: '#d9dee5',
  band: '#f1f4f8',
  good: '#18794e',
  warning: '#b45309',
  neutral: '#4b5563',
};
const SIZE = { title: 22, wordmark: 18, heading: 10, body: 9.5, small: 8 };
const WORDMARK_WIDTH = 270;
/** Labels of a section's rows: "Kode Perusahaan (Biller Code)" on one line. */
const LABEL_WIDTH = 170;

interface Column {
  key: 'description' | 'quantity' | 'unitAmount' | 'amount';
  title: string;
  width: number;
  align: 'left' | 'right';
}

/**
 * Table columns of the lines: description takes what the numbers leave. Lines without
 * quantities (a credit note's) show only the description and the amount.
 */
function columnsOf(view: DocumentView): Column[] {
  const titles = view.layout.columns;
  if (view.lines.every((l) => l.quantity === '' && l.unitAmount === '')) {
    return [
      { key: 'description', title: titles.description, width: CONTENT_WIDTH - 110, align: 'left' },
      { key: 'amount', title: titles.amount, width: 110, align: 'right' },
    ];
  }
  return [
    { key: 'description', title: titles.description, width: CONTENT_WIDTH - 250, align: 'left' },
    { key: 'quantity', title: titles.quantity, width: 40, align: 'right' },
    { key: 'unitAmount', title: titles.unitPrice, width: 100, align: 'right' },
    { key: 'amount', title: titles.amount, width: 110, align: 'right' },
  ];
}

type Doc = PDFKit.PDFDocument;

/**
 * pdfkit (with its font and image parsers) is loaded when the first document is drawn, not when
 * the server or a CLI command starts: most of them never draw one.
 */
const loadPdfkit = () => import('pdfkit');
let pdfkit: ReturnType<typeof loadPdfkit> | null = null;

/** The document as PDF bytes. */
export async function renderDocumentPdf(view: DocumentView): Promise<Buffer> {
  pdfkit ??= loadPdfkit();
  const { default: PDFDocument } = await pdfkit;
  const doc = new PDFDocument({
    size: 'A4',
    margins: { top: PAGE.margin, bottom: PAGE.margin, left: PAGE.margin, right: PAGE.margin },
    info: {
      Title: `${view.title} ${view.number}`,
      Author: view.seller.name,
      Subject: `${view.title} ${view.number}`,
      Producer: 'billing-service',
      Creator: 'billing-service',
      CreationDate: view.issuedAt,
    },
    bufferPages: true,
  });
  doc.registerFont('regular', readOnce(FONT_PATHS.regular));
  doc.registerFont('bold', readOnce(FONT_PATHS.bold));

  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });

  header(doc, view);
  partiesAndFacts(doc, view);
  linesTable(doc, view);
  totals(doc, view);
  for (const section of view.sections) if (section.rows.length > 0) sectionBlock(doc, section);
  footer(doc, view);
  doc.end();
  return done;
}

function font(doc: Doc, weight: 'regular' | 'bold', size: number, colour = COLOURS.text): Doc {
  return doc.font(weight).fontSize(size).fillColor(colour);
}

/** Starts a new page when `height` more points do not fit above the bottom margin. */
function ensureRoom(doc: Doc, height: number): void {
  if (doc.y + height > PAGE.height - PAGE.margin - 30) {
    doc.addPage();
    doc.y = PAGE.margin;
  }
}

function rule(doc: Doc, y: number, colour = COLOURS.rule): void {
  doc.moveTo(PAGE.margin, y).lineTo(PAGE.width - PAGE.margin, y).lineWidth(0.7).strokeColor(colour).stroke();
}

function header(doc: Doc, view: DocumentView): void {
  const top = PAGE.margin;
  if (view.seller.logoPath) {
    doc.image(readOnce(view.seller.logoPath), PAGE.margin, top, { fit: [160, 48] });
  } else {
    // The name as a wordmark, on one line: a long name is drawn smaller rather than wrapped.
    let size = SIZE.wordmark;
    while (size > 10 && font(doc, 'bold', size).widthOfString(view.seller.name) > WORDMARK_WIDTH) size -= 1;
    font(doc, 'bold', size, COLOURS.accent).text(view.seller.name, PAGE.margin, top + 8, { width: WORDMARK_WIDTH, height: size * 1.4, ellipsis: true });
  }
  const right = { x: PAGE.margin + CONTENT_WIDTH - 220, width: 220 };
  font(doc, 'bold', SIZE.title).text(view.title.toUpperCase(), right.x, top, { width: right.width, align: 'right' });
  font(doc, 'regular', SIZE.heading + 1, COLOURS.muted).text(view.number, right.x, doc.y + 2, { width: right.width, align: 'right' });
  if (view.stamp) {
    const colour = COLOURS[view.stamp.tone];
    font(doc, 'bold', SIZE.small + 0.5, colour);
    const width = doc.widthOfString(view.stamp.text) + 16;
    const x = PAGE.margin + CONTENT_WIDTH - width;
    const y = doc.y + 5;
    doc.roundedRect(x, y, width, 16, 3).lineWidth(1).strokeColor(colour).stroke();
    doc.text(view.stamp.text, x, y + 4, { width, align: 'center', lineBreak: false });
  }
  doc.y = Math.max(doc.y, top + 56) + 12;
  rule(doc, doc.y, COLOURS.accent);
  doc.y += 14;
}

function labelledBlock(doc: Doc, x: number, y: number, width: number, heading: string, name: string, lines: string[]): number {
  font(doc, 'bold', SIZE.small, COLOURS.muted).text(heading.toUpperCase(), x, y, { width, characterSpacing: 0.5 });
  font(doc, 'bold', SIZE.body + 0.5).text(name, x, doc.y + 3, { width });
  font(doc, 'regular', SIZE.body);
  for (const line of lines) doc.text(line, x, doc.y + 1, { width });
  return doc.y;
}

function partiesAndFacts(doc: Doc, view: DocumentView): void {
  const top = doc.y;
  const half = CONTENT_WIDTH * 0.45;
  const sellerBottom = labelledBlock(doc, PAGE.margin, top, half, view.seller.heading, view.seller.name, view.seller.lines);

  const factsWidth = CONTENT_WIDTH * 0.5;
  const factsX = PAGE.margin + CONTENT_WIDTH - factsWidth;
  // As wide as the longest label ("No. Faktur Pajak"), within reason: values keep the rest.
  font(doc, 'regular', SIZE.body);
  const labelWidth = Math.min(factsWidth * 0.45, Math.max(62, ...view.facts.map(([label]) => doc.widthOfString(label) + 8)));
  let y = top;
  for (const [label, value] of view.facts) {
    font(doc, 'regular', SIZE.body, COLOURS.muted).text(label, factsX, y, { width: labelWidth });
    font(doc, 'bold', SIZE.body).text(value, factsX + labelWidth, y, { width: factsWidth - labelWidth, align: 'right' });
    y = doc.y + 3;
  }

  const customerTop = Math.max(sellerBottom, y) + 16;
  const customerBottom = labelledBlock(doc, PAGE.margin, customerTop, half, view.customer.heading, view.customer.name, view.customer.lines);
  doc.y = customerBottom + 20;
}

function linesTable(doc: Doc, view: DocumentView): void {
  const padding = 6;
  const columns = columnsOf(view);
  const headerHeight = 20;
  const drawHeader = () => {
    const y = doc.y;
    doc.rect(PAGE.margin, y, CONTENT_WIDTH, headerHeight).fill(COLOURS.band);
    let x = PAGE.margin;
    font(doc, 'bold', SIZE.small + 0.5, COLOURS.muted);
    for (const column of columns) {
      doc.text(column.title, x + padding, y + 6, { width: column.width - 2 * padding, align: column.align, lineBreak: false });
      x += column.width;
    }
    doc.y = y + headerHeight;
  };
  ensureRoom(doc, headerHeight + 30);
  drawHeader();

  for (const line of view.lines) {
    const descriptionWidth = columns[0].width - 2 * padding;
    font(doc, 'regular', SIZE.body);
    let height = doc.heightOfString(line.description, { width: descriptionWidth });
    if (line.detail) height += font(doc, 'regular', SIZE.small).heightOfString(line.detail, { width: descriptionWidth }) + 2;
    height += 2 * padding;
    if (doc.y + height > PAGE.height - PAGE.margin - 30) {
      doc.addPage();
      doc.y = PAGE.margin;
      drawHeader();
    }
    const y = doc.y;
    let x = PAGE.margin;
    for (const column of columns) {
      const width = column.width - 2 * padding;
      if (column.key === 'description') {
        font(doc, 'regular', SIZE.body).text(line.description, x + padding, y + padding, { width });
        if (line.detail) font(doc, 'regular', SIZE.small, COLOURS.muted).text(line.detail, x + padding, doc.y + 2, { width });
      } else {
        font(doc, 'regular', SIZE.body).text(line[column.key], x + padding, y + padding, { width, align: column.align, lineBreak: false });
      }
      x += column.width;
    }
    doc.y = y + height;
    rule(doc, doc.y);
  }
  doc.y += 10;
}

function totals(doc: Doc, view: DocumentView): void {
  const width = 270;
  const labelWidth = 140;
  const x = PAGE.margin + CONTENT_WIDTH - width;
  ensureRoom(doc, view.totals.length * 18 + 10);
  for (const total of view.totals) {
    const y = doc.y;
    const weight = total.strong ? 'bold' : 'regular';
    const size = total.strong ? SIZE.body + 1.5 : SIZE.body;
    if (total.strong) {
      doc.rect(x, y - 4, width, 22).fill(COLOURS.band);
    }
    font(doc, weight, size, total.strong ? COLOURS.text : COLOURS.muted).text(total.label, x + 6, y + (total.strong ? 1 : 0), { width: labelWidth, lineBreak: false });
    font(doc, weight, size).text(total.value, x + 6 + labelWidth, y + (total.strong ? 1 : 0), { width: width - 12 - labelWidth, align: 'right', lineBreak: false });
    doc.y = y + (total.strong ? 24 : 16);
  }
  doc.y += 14;
}

function sectionBlock(doc: Doc, section: DocumentSection): void {
  ensureRoom(doc, 40 + section.rows.length * 14 + (section.note ? 30 : 0));
  font(doc, 'bold', SIZE.heading, COLOURS.accent).text(section.heading, PAGE.margin, doc.y, { width: CONTENT_WIDTH });
  doc.y += 3;
  rule(doc, doc.y);
  doc.y += 5;
  if (section.note) {
    font(doc, 'regular', SIZE.body).text(section.note, PAGE.margin, doc.y, { width: CONTENT_WIDTH });
    doc.y += 6;
  }
  if (section.columns) {
    tableRows(doc, [section.columns, ...section.rows], true);
  } else {
    for (const [label, value] of section.rows) {
      const y = doc.y;
      font(doc, 'regular', SIZE.body, COLOURS.muted).text(label, PAGE.margin, y, { width: LABEL_WIDTH - 6 });
      const labelBottom = doc.y;
      font(doc, 'regular', SIZE.body).text(value, PAGE.margin + LABEL_WIDTH, y, { width: CONTENT_WIDTH - LABEL_WIDTH });
      doc.y = Math.max(doc.y, labelBottom, y + 12) + 2;
    }
  }
  doc.y += 12;
}

/** A small table: the first and last columns (a date, an amount) narrow, the rest sharing what is left; the last is right-aligned. */
function tableRows(doc: Doc, rows: string[][], firstIsHeader: boolean): void {
  const count = rows[0]?.length ?? 0;
  if (count === 0) return;
  const edge = count > 2 ? CONTENT_WIDTH * 0.17 : CONTENT_WIDTH / count;
  const middle = count > 2 ? (CONTENT_WIDTH - 2 * edge) / (count - 2) : edge;
  const widthOf = (column: number) => (column === 0 || column === count - 1 ? edge : middle);
  rows.forEach((row, index) => {
    const header = firstIsHeader && index === 0;
    ensureRoom(doc, 16);
    const y = doc.y;
    let x = PAGE.margin;
    let bottom = y;
    row.forEach((cell, column) => {
      const width = widthOf(column);
      font(doc, header ? 'bold' : 'regular', header ? SIZE.small + 0.5 : SIZE.body, header ? COLOURS.muted : COLOURS.text).text(cell, x, y, {
        width: width - 6,
        align: column === count - 1 && count > 1 ? 'right' : 'left',
      });
      bottom = Math.max(bottom, doc.y);
      x += width;
    });
    doc.y = bottom + 4;
  });
}

function footer(doc: Doc, view: DocumentView): void {
  const range = doc.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    doc.switchToPage(i);
    // Writing inside the bottom margin would make pdfkit start a page of its own.
    const bottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0;
    const y = PAGE.height - PAGE.margin + 4;
    doc.moveTo(PAGE.margin, y - 6).lineTo(PAGE.width - PAGE.margin, y - 6).lineWidth(0.5).strokeColor(COLOURS.rule).stroke();
    font(doc, 'regular', SIZE.small - 0.5, COLOURS.muted).text(view.footer.join('  ·  '), PAGE.margin, y, {
      width: CONTENT_WIDTH - 80,
      lineBreak: false,
      ellipsis: true,
    });
    const page = view.layout.page.replace('{page}', String(i - range.start + 1)).replace('{pages}', String(range.count));
    doc.text(page, PAGE.margin + CONTENT_WIDTH - 80, y, { width: 80, align: 'right', lineBreak: false });
    doc.page.margins.bottom = bottom;
  }
}
