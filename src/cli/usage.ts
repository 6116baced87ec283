/**
 * Usage errors in the user's words. yargs words its validation failures in its own terms
 * ("Not enough non-option arguments: got 0, need at least 1", "Unknown arguments: bogus-flag,
 * bogusFlag", "Argument: type, Given: ..."): these are turned into one plain sentence that
 * names the flag or argument as typed, with a did-you-mean for a choice, as node-triton and
 * sdcadm say them. A field of the control API named in a message becomes the flag that sets it.
 */

/** What each command needs first, said plainly when it is missing. */
const MISSING: Record<string, string> = {
  scenario: 'name what to do: mockcloud scenario validate FILE, scenario run FILE or scenario stop',
  faults: 'name what to do: mockcloud faults list, faults add, faults remove ID or faults clear',
  mirror: 'name what to do: mockcloud mirror capture FILE or mirror load FILE',
  event: 'name the event: mockcloud event TYPE [target] [--duration D] (see the types below), or event end ID|--all',
  'create-servers': 'say how many: mockcloud create-servers N',
  'ensure-servers': 'say how many: mockcloud ensure-servers N',
};

/** What a positional with choices is, in a sentence. */
const NOUNS: Record<string, string> = { type: 'event type', action: 'action' };

/** "--bogus-flag" for a long name, "-o" for a one-letter one. */
export function flagName(name: string): string {
  return name.length === 1 ? `-${name}` : `--${name}`;
}

/** Edit distance, for did-you-mean (choices and flags are a few dozen short words). */
function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/** The choice a mistyped word most likely meant: a prefix of one, or within 2 edits. */
export function didYouMean(given: string, choices: readonly string[]): string | undefined {
  const g = given.toLowerCase();
  const prefixed = choices.filter((c) => g.length >= 2 && c.startsWith(g));
  if (prefixed.length === 1) return prefixed[0];
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of choices) {
    const d = distance(g, c.toLowerCase());
    if (d < bestD) [best, bestD] = [c, d];
  }
  return bestD <= Math.min(2, Math.max(1, Math.floor(g.length / 3))) ? best : undefined;
}

/** The quoted values of a yargs list (`"a", "b"`). */
function quoted(list: string): string[] {
  return [...list.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);
}

/** Whether the user typed `name` as a flag (`--api x`, `--api=x`), not as a positional. */
function typedAsFlag(name: string, args: readonly string[]): boolean {
  return args.some((a) => a === flagName(name) || a.startsWith(`${flagName(name)}=`));
}

/**
 * yargs' message for a failed validation, in the user's words; `command` is the command typed
 * (if any), `args` what was typed, `options` the command's flag names (for did-you-mean).
 */
export function plainUsage(msg: string, command: string | undefined, args: readonly string[], options: readonly string[] = []): string {
  const text = msg.trim();
  let m = /^Not enough non-option arguments/.exec(text);
  if (m) return (command && MISSING[command]) || `mockcloud ${command ?? ''} is missing an argument`.replace(/\s+/g, ' ');
  m = /^Unknown arguments?: (.*)$/s.exec(text);
  if (m) {
    const names = m[1]!.split(/,\s*/).map((s) => s.trim()).filter(Boolean);
    const kebab = new Set(names.filter((n) => n.includes('-')).map((n) => n.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())));
    // yargs names --bogus-flag twice (bogus-flag, bogusFlag): once is enough.
    const unknown = names.filter((n) => !kebab.has(n));
    const said = unknown.map((n) => {
      // A word that is not a flag (`mockcloud list-servers extra`) stays a word.
      const typed = args.find((a) => a === flagName(n) || a.startsWith(`${flagName(n)}=`)) ? flagName(n) : n;
      const near = typed.startsWith('-') ? didYouMean(n, options) : undefined;
      return `${typed}${near ? ` (did you mean ${flagName(near)}?)` : ''}`;
    });
    return `unknown ${unknown.every((n) => typedAsFlag(n, args)) ? 'option' : 'argument'}${said.length > 1 ? 's' : ''}: ${said.join(', ')}`;
  }
  m = /^Not enough arguments following: (.+)$/.exec(text);
  if (m) return `${flagName(m[1]!)} needs a value`;
  m = /^Invalid values:\s*Argument: (\S+), Given: (.*), Choices: (.*)$/s.exec(text);
  if (m) {
    const name = m[1]!;
    const given = quoted(m[2]!)[0] ?? m[2]!;
    const choices = quoted(m[3]!);
    const near = didYouMean(given, choices);
    const guess = near ? `; did you mean ${near}?` : '';
    if (typedAsFlag(name, args)) return `${flagName(name)} ${JSON.stringify(given)} is not one of ${choices.join(', ')}${guess}`;
    const noun = NOUNS[name] ?? name;
    return `${JSON.stringify(given)} is not ${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}${guess} (the choices: ${choices.join(', ')})`;
  }
  m = /^Missing required arguments?: (.*)$/.exec(text);
  if (m) return `missing ${m[1]}`;
  return text;
}

/**
 * A control API message in the user's words: each field name (`params.delayMs`, `target.count`)
 * becomes the flag that sets it (`--delay`, `--count`); a "params of TYPE:" prefix becomes "TYPE:".
 */
export function inFlagTerms(message: string, flags: Readonly<Record<string, string>>): string {
  let out = message.replace(/\bparams of ([a-z-]+):/g, '$1:');
  // Longest first: `params.percentUsed` before `percent`.
  for (const field of Object.keys(flags).sort((a, b) => b.length - a.length)) {
    const re = new RegExp(`(^|[^\\w.-])${field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w])`, 'g');
    out = out.replace(re, (_, pre: string) => `${pre}${flags[field]}`);
  }
  return out;
}
