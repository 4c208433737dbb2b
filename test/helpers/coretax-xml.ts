import { create } from 'xmlbuilder2';

/** Reading a Coretax import file (docs/tax.md) as a finance officer's tool would: elements by name, text by field. */
export type XmlNode = { nodeType: number; nodeName: string; textContent: string | null; childNodes: ArrayLike<XmlNode> };

export const parseXml = (xml: string) => create(xml).root().node as unknown as XmlNode;
export const elements = (node: XmlNode) => Array.from(node.childNodes).filter((n) => n.nodeType === 1);
export const child = (node: XmlNode, name: string) => elements(node).find((n) => n.nodeName === name)!;
export const text = (node: XmlNode, name: string) => child(node, name).textContent ?? '';
/** The `TaxInvoice` elements of an export, in the file's order. */
export const fakturs = (xml: string) => elements(child(parseXml(xml), 'ListOfTaxInvoice'));
