/**
 * Imported first by the `mockcloud` entry point, before any module that loads restify.
 *
 * restify 11 (the last restify for Node 20) requires `spdy` at the top of lib/server.js, used or
 * not, and spdy's http-deceiver calls `process.binding('http_parser')` when it loads: Node prints
 * a DEP0111 DeprecationWarning twice at every start. There is no restify 11 entry point that
 * skips spdy, and mockcloud never serves HTTP/2 or SPDY, so that one warning says nothing about
 * mockcloud. Only DEP0111 is dropped; every other warning (and every other deprecation) is
 * printed as Node prints it.
 */
const IGNORED_CODE = 'DEP0111';

const emitWarning = process.emitWarning.bind(process);

function codeOf(args: unknown[]): string | undefined {
  // emitWarning(warning, type, code, ctor) or emitWarning(warning, {type, code, ...}); an Error
  // passed as the warning carries its own code.
  const [warning, second, third] = args;
  if (typeof third === 'string') return third;
  if (typeof second === 'object' && second !== null && typeof (second as { code?: unknown }).code === 'string') {
    return (second as { code: string }).code;
  }
  const own = warning instanceof Error ? (warning as Error & { code?: unknown }).code : undefined;
  if (typeof own === 'string') return own;
  return undefined;
}

process.emitWarning = ((...args: Parameters<typeof process.emitWarning>) => {
  if (codeOf(args) === IGNORED_CODE) return;
  (emitWarning as (...a: unknown[]) => void)(...args);
}) as typeof process.emitWarning;

export {};
