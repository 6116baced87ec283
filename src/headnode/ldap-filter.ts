/**
 * LDAP search filters as the Moray-backed services parse them: `ldap-filter`, the library
 * VMAPI, PAPI and Moray use. One parse for the dev headnode's services that search their
 * records with a filter (vmapi/ldap.ts, papi/moray-query.ts).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The parsed filter node of `ldap-filter` (the subset of its shape used here). */
export interface LdapFilter {
  type: string;
  attribute?: string;
  value?: unknown;
  filter?: LdapFilter;
  filters?: LdapFilter[];
  /** Substring filters (and case-ignoring substring ext filters). */
  initial?: string;
  any?: string[];
  final?: string;
  /** Ext filters: the matching rule. */
  rule?: string;
  matches(target: Record<string, unknown>, strictAttrCase?: boolean): boolean;
  toString(): string;
}

const ldap = require('ldap-filter') as { parse(str: string): LdapFilter };

/** Parse a filter; throws (ldap-filter's error) when it is not one. */
export function parseLdapFilter(text: string): LdapFilter {
  return ldap.parse(text);
}
