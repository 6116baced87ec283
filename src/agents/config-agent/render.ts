/**
 * Rendering a manifest the way config-agent renders it (sdc-config-agent lib/agent/agent.js
 * renderConfigFile): hogan.js over the SAPI metadata, with `auto` (the values config-agent
 * finds itself) put in last. Joyent's hogan.js fork, which config-agent depends on, renders
 * `{{{key}}}` of an object as its JSON (AGENT-945); the same is done here on the npm
 * hogan.js by the one method through which every triple mustache passes.
 *
 * Compiled templates are cached by their text: every CN renders the same few.
 */
import { createRequire } from 'node:module';

interface HoganTemplate {
  render(view: unknown): string;
  /** Coerces a `{{{...}}}` value to text. */
  t(value: unknown): string;
}
interface Hogan {
  compile(text: string): HoganTemplate;
}

const hogan = createRequire(import.meta.url)('hogan.js') as Hogan;

const CACHE_MAX = 256;
const cache = new Map<string, HoganTemplate | Error>();

function compiled(template: string): HoganTemplate {
  let t = cache.get(template);
  if (t === undefined) {
    try {
      const tpl = hogan.compile(template);
      const plain = tpl.t.bind(tpl);
      tpl.t = (value: unknown) => (typeof value === 'object' && value !== null ? JSON.stringify(value) : plain(value));
      t = tpl;
    } catch (err) {
      t = err instanceof Error ? err : new Error(String(err));
    }
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    cache.set(template, t);
  }
  if (t instanceof Error) throw t;
  return t;
}

/**
 * The file's contents, or throws (`invalid hogan template: ...`) when the template does not
 * compile. An empty rendering is refused too: the real agent then writes nothing.
 */
export function renderManifest(template: string, metadata: Record<string, unknown>, auto: Record<string, unknown>): string {
  let tpl: HoganTemplate;
  try {
    tpl = compiled(template);
  } catch (err) {
    throw new Error(`invalid hogan template: ${(err as Error).message}`);
  }
  const contents = tpl.render({ ...metadata, auto });
  if (!contents) throw new Error('failed to render configuration file');
  return contents;
}
