/**
 * A small, strict XML parser for checking SMF manifests without network or native tools. It
 * accepts the subset manifests use (XML declaration, DOCTYPE with a SYSTEM id, comments,
 * elements, attributes, character data, the predefined and numeric entities) and throws on
 * anything not well-formed: mismatched or unclosed tags, unquoted or duplicate attributes, a
 * bare "&" or "<", "--" inside a comment, content outside the single root element.
 */

export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  /** Character data directly inside this element (entities decoded), trimmed. */
  text: string;
  line: number;
}

export interface XmlDocument {
  declaration?: Record<string, string>;
  doctype?: { root: string; systemId?: string };
  root: XmlElement;
}

export class XmlError extends Error {}

const NAME_RE = /^[A-Za-z_:][A-Za-z0-9_:.-]*/;
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export function parseXml(src: string): XmlDocument {
  let pos = 0;
  const lineAt = (p: number) => src.slice(0, p).split('\n').length;
  const fail = (msg: string): never => {
    throw new XmlError(`line ${lineAt(pos)}: ${msg}`);
  };
  const startsWith = (s: string) => src.startsWith(s, pos);
  const skipSpace = () => {
    while (pos < src.length && /\s/.test(src[pos]!)) pos++;
  };
  const readName = (): string => {
    const m = NAME_RE.exec(src.slice(pos));
    if (!m) fail(`expected a name at ${JSON.stringify(src.slice(pos, pos + 20))}`);
    pos += m![0].length;
    return m![0];
  };
  const decode = (raw: string, where: string): string => {
    if (raw.includes('<')) fail(`"<" in ${where}`);
    return raw.replace(/&([^;\s&]*);?/g, (whole, ref: string) => {
      if (!whole.endsWith(';')) fail(`bare "&" in ${where}`);
      if (ref in ENTITIES) return ENTITIES[ref]!;
      const num = /^#(x[0-9a-fA-F]+|[0-9]+)$/.exec(ref);
      if (num) return String.fromCodePoint(num[1]![0] === 'x' ? parseInt(num[1]!.slice(1), 16) : Number(num[1]));
      return fail(`unknown entity &${ref}; in ${where}`);
    });
  };
  const readAttrs = (): Record<string, string> => {
    const attrs: Record<string, string> = {};
    for (;;) {
      const before = pos;
      skipSpace();
      if (startsWith('/>') || startsWith('>') || startsWith('?>')) return attrs;
      if (pos === before) fail('expected whitespace before an attribute');
      const name = readName();
      skipSpace();
      if (src[pos] !== '=') fail(`attribute ${name} has no "="`);
      pos++;
      skipSpace();
      const quote = src[pos];
      if (quote !== '"' && quote !== "'") fail(`attribute ${name} is not quoted`);
      const end = src.indexOf(quote!, pos + 1);
      if (end < 0) fail(`attribute ${name} is not closed`);
      if (name in attrs) fail(`duplicate attribute ${name}`);
      attrs[name] = decode(src.slice(pos + 1, end), `attribute ${name}`);
      pos = end + 1;
    }
  };
  const skipComment = () => {
    const end = src.indexOf('-->', pos + 4);
    if (end < 0) fail('unclosed comment');
    if (src.slice(pos + 4, end).includes('--')) fail('"--" inside a comment');
    pos = end + 3;
  };
  // Comments, processing instructions and whitespace between top-level constructs.
  const skipMisc = () => {
    for (;;) {
      skipSpace();
      if (startsWith('<!--')) skipComment();
      else if (startsWith('<?')) fail('processing instruction after the start');
      else return;
    }
  };

  const doc: Partial<XmlDocument> = {};
  if (startsWith('<?xml')) {
    pos += 5;
    doc.declaration = readAttrs();
    if (!startsWith('?>')) fail('XML declaration not closed');
    pos += 2;
    if (!doc.declaration.version) fail('XML declaration without version');
  }
  skipMisc();
  if (startsWith('<!DOCTYPE')) {
    pos += 9;
    skipSpace();
    const root = readName();
    skipSpace();
    let systemId: string | undefined;
    if (startsWith('SYSTEM')) {
      pos += 6;
      skipSpace();
      const q = src[pos];
      if (q !== '"' && q !== "'") fail('DOCTYPE SYSTEM id not quoted');
      const end = src.indexOf(q!, pos + 1);
      systemId = src.slice(pos + 1, end);
      pos = end + 1;
      skipSpace();
    }
    if (src[pos] !== '>') fail('DOCTYPE not closed (internal subsets are not supported)');
    pos++;
    doc.doctype = systemId === undefined ? { root } : { root, systemId };
  }
  skipMisc();

  const readElement = (): XmlElement => {
    const line = lineAt(pos);
    if (src[pos] !== '<') fail('expected an element');
    pos++;
    const name = readName();
    const attrs = readAttrs();
    const el: XmlElement = { name, attrs, children: [], text: '', line };
    if (startsWith('/>')) {
      pos += 2;
      return el;
    }
    if (src[pos] !== '>') fail(`tag <${name}> not closed`);
    pos++;
    let text = '';
    for (;;) {
      if (pos >= src.length) fail(`<${name}> (line ${line}) is never closed`);
      if (startsWith('</')) {
        pos += 2;
        const close = readName();
        if (close !== name) fail(`</${close}> closes <${name}> (line ${line})`);
        skipSpace();
        if (src[pos] !== '>') fail(`</${close}> not closed`);
        pos++;
        el.text = decode(text, `<${name}>`).trim();
        return el;
      }
      if (startsWith('<!--')) skipComment();
      else if (startsWith('<![CDATA[')) fail('CDATA is not expected in a manifest');
      else if (src[pos] === '<') el.children.push(readElement());
      else {
        const next = src.indexOf('<', pos);
        text += src.slice(pos, next < 0 ? src.length : next);
        pos = next < 0 ? src.length : next;
      }
    }
  };
  doc.root = readElement();
  skipMisc();
  if (pos < src.length) fail('content after the root element');
  return doc as XmlDocument;
}
