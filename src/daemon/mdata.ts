/**
 * SmartOS metadata (`mdata-get <key>`), the last configuration source before the defaults. In a
 * mockcloud0 zone it names the datacenter, the DNS domain, the admin user and the zone's NICs;
 * elsewhere `mdata-get` is absent and every key reads as unset.
 */
import { execFile } from 'node:child_process';

export type MdataReader = (key: string) => Promise<string | undefined>;

/** Reads keys with `mdata-get` from PATH; remembers answers (mdata does not change while we run). */
export function systemMdataReader(timeoutMs = 5000): MdataReader {
  const cache = new Map<string, Promise<string | undefined>>();
  let missing = false;
  return (key) => {
    if (missing) return Promise.resolve(undefined);
    let answer = cache.get(key);
    if (!answer) {
      answer = new Promise((resolve) => {
        execFile('mdata-get', [key], { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout) => {
          if (err) {
            if ((err as NodeJS.ErrnoException).code === 'ENOENT') missing = true;
            resolve(undefined);
            return;
          }
          const value = stdout.replace(/\n$/, '');
          resolve(value === '' ? undefined : value);
        });
      });
      cache.set(key, answer);
    }
    return answer;
  };
}

/** No mdata at all (tests; `MOCKCLOUD_NO_MDATA=1`). */
export const noMdata: MdataReader = async () => undefined;

/** A fixed table of keys (tests). */
export function staticMdata(values: Record<string, string>): MdataReader {
  return async (key) => values[key];
}
