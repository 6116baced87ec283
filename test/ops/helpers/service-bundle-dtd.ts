/**
 * The structure SMF's service_bundle DTD (/usr/share/lib/xml/dtd/service_bundle.dtd.1, as in
 * illumos-gate usr/src/cmd/svc/dtd) demands of the elements a manifest uses, restated as data:
 * each element's allowed children in order (a content model), its attributes, which of them are
 * required and which take one of a fixed set of values. `validateServiceBundle` checks a parsed
 * document against it the way a validating parser would: unknown elements or attributes,
 * children out of order or missing, absent required attributes, values outside an enumeration.
 */
import type { XmlDocument, XmlElement } from './xml.js';

interface AttrRule {
  required?: boolean;
  oneOf?: readonly string[];
}

interface ElementRule {
  /** Children in the DTD's notation: `a? b* (c|d)* e+`; 'EMPTY'; or 'PCDATA' (text only). */
  content: string;
  attrs: Record<string, AttrRule>;
}

const BOOL = ['true', 'false'] as const;
const PROP_TYPES = [
  'count', 'integer', 'opaque', 'host', 'hostname', 'net_address_v4', 'net_address_v6',
  'time', 'astring', 'ustring', 'boolean', 'fmri', 'uri',
] as const;
const GROUPINGS = ['require_all', 'require_any', 'exclude_all', 'optional_all'] as const;
const RESTART_ON = ['error', 'restart', 'refresh', 'none'] as const;

export const SERVICE_BUNDLE_RULES: Record<string, ElementRule> = {
  service_bundle: {
    content: '(service_bundle|service|xi:include)*',
    attrs: { type: { required: true }, name: { required: true } },
  },
  service: {
    content:
      'create_default_instance? single_instance? restarter? dependency* dependent* method_context? exec_method* property_group* instance* stability? template?',
    attrs: {
      name: { required: true },
      version: { required: true },
      type: { required: true, oneOf: ['service', 'restarter', 'milestone'] },
    },
  },
  instance: {
    content: 'restarter? dependency* dependent* method_context? exec_method* property_group* template?',
    attrs: { name: { required: true }, enabled: { required: true, oneOf: BOOL } },
  },
  create_default_instance: { content: 'EMPTY', attrs: { enabled: { required: true, oneOf: BOOL } } },
  single_instance: { content: 'EMPTY', attrs: {} },
  restarter: { content: 'service_fmri', attrs: {} },
  dependency: {
    content: 'service_fmri* stability? (propval|property)*',
    attrs: {
      name: { required: true },
      grouping: { required: true, oneOf: GROUPINGS },
      restart_on: { required: true, oneOf: RESTART_ON },
      type: { required: true },
      delete: { oneOf: BOOL },
    },
  },
  dependent: {
    content: 'service_fmri stability? (propval|property)*',
    attrs: {
      name: { required: true },
      grouping: { required: true, oneOf: GROUPINGS },
      restart_on: { required: true, oneOf: RESTART_ON },
      delete: { oneOf: BOOL },
      override: { oneOf: BOOL },
    },
  },
  service_fmri: { content: 'EMPTY', attrs: { value: { required: true } } },
  method_context: {
    content: '(method_profile|method_credential)? method_environment?',
    attrs: { working_directory: {}, project: {}, resource_pool: {} },
  },
  method_profile: { content: 'EMPTY', attrs: { name: { required: true } } },
  method_credential: {
    content: 'EMPTY',
    attrs: { user: { required: true }, group: {}, supp_groups: {}, privileges: {}, limit_privileges: {} },
  },
  method_environment: { content: 'envvar+', attrs: {} },
  envvar: { content: 'EMPTY', attrs: { name: { required: true }, value: { required: true } } },
  exec_method: {
    content: 'method_context? stability? (propval|property)*',
    attrs: {
      type: { required: true, oneOf: ['method', 'monitor'] },
      name: { required: true },
      exec: { required: true },
      timeout_seconds: { required: true },
      delete: { oneOf: BOOL },
    },
  },
  property_group: {
    content: 'stability? (propval|property)*',
    attrs: { name: { required: true }, type: { required: true }, delete: { oneOf: BOOL } },
  },
  propval: {
    content: 'EMPTY',
    attrs: {
      name: { required: true },
      type: { required: true, oneOf: PROP_TYPES },
      value: { required: true },
      override: { oneOf: BOOL },
    },
  },
  stability: {
    content: 'EMPTY',
    attrs: { value: { required: true, oneOf: ['Standard', 'Stable', 'Evolving', 'Unstable', 'External', 'Obsolete'] } },
  },
  template: { content: 'common_name description? documentation? pg_pattern*', attrs: {} },
  common_name: { content: 'loctext+', attrs: {} },
  description: { content: 'loctext+', attrs: {} },
  loctext: { content: 'PCDATA', attrs: { 'xml:lang': { required: true } } },
  documentation: { content: '(doc_link|manpage)*', attrs: {} },
  doc_link: { content: 'EMPTY', attrs: { name: { required: true }, uri: { required: true } } },
  manpage: { content: 'EMPTY', attrs: { title: { required: true }, section: { required: true }, manpath: {} } },
};

/** `a? (b|c)* d+` → a regex over children written as `<name>` tokens. */
function compileContentModel(model: string): RegExp {
  const parts = model.split(/\s+/).map((tok) => {
    const m = /^(\(([^)]+)\)|[A-Za-z_:][A-Za-z0-9_:.-]*)([?*+]?)$/.exec(tok);
    if (!m) throw new Error(`bad content model token ${tok}`);
    const names = m[2] ? m[2].split('|') : [m[1]!];
    return `(?:${names.map((n) => `<${n}>`).join('|')})${m[3]}`;
  });
  return new RegExp(`^${parts.join('')}$`);
}

/** Every violation found, as "line N: <element>: problem"; empty when the document is valid. */
export function validateServiceBundle(doc: XmlDocument): string[] {
  const problems: string[] = [];
  if (doc.doctype?.root !== 'service_bundle') problems.push('DOCTYPE must name service_bundle');
  if (doc.root.name !== 'service_bundle') problems.push(`root element is <${doc.root.name}>, not <service_bundle>`);
  const visit = (el: XmlElement) => {
    const at = `line ${el.line}: <${el.name}>`;
    const rule = SERVICE_BUNDLE_RULES[el.name];
    if (!rule) {
      problems.push(`${at}: element not declared in the DTD`);
      return;
    }
    for (const [name, a] of Object.entries(rule.attrs)) {
      const v = el.attrs[name];
      if (v === undefined) {
        if (a.required) problems.push(`${at}: required attribute ${name} missing`);
      } else if (a.oneOf && !a.oneOf.includes(v)) {
        problems.push(`${at}: ${name}="${v}" is not one of ${a.oneOf.join(', ')}`);
      }
    }
    for (const name of Object.keys(el.attrs)) {
      if (!(name in rule.attrs)) problems.push(`${at}: attribute ${name} not declared`);
    }
    if (rule.content === 'EMPTY' || rule.content === 'PCDATA') {
      if (el.children.length > 0) problems.push(`${at}: must not contain elements`);
      if (rule.content === 'EMPTY' && el.text !== '') problems.push(`${at}: must be empty`);
    } else {
      if (el.text !== '') problems.push(`${at}: text is not allowed here`);
      const seq = el.children.map((c) => `<${c.name}>`).join('');
      if (!compileContentModel(rule.content).test(seq)) {
        problems.push(`${at}: children [${el.children.map((c) => c.name).join(', ')}] do not match (${rule.content})`);
      }
    }
    el.children.forEach(visit);
  };
  visit(doc.root);
  return problems;
}

/** All descendants named `name`, depth first. */
export function findAll(el: XmlElement, name: string): XmlElement[] {
  const out: XmlElement[] = [];
  const walk = (e: XmlElement) => {
    for (const c of e.children) {
      if (c.name === name) out.push(c);
      walk(c);
    }
  };
  walk(el);
  return out;
}
