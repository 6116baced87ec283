/** `--ui-address`: what it takes, what it refuses, and that the config names the flag. */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/daemon/config.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { listenerUrl } from '../../src/common/listen-address.js';
import { parseUiAddress } from '../../src/ui/address.js';

describe('--ui-address', () => {
  it('takes IP, IP:PORT, [IPv6]:PORT and none', () => {
    expect(parseUiAddress('127.0.0.1')).toEqual({ ip: '127.0.0.1', port: 0 });
    expect(parseUiAddress('0.0.0.0:8090')).toEqual({ ip: '0.0.0.0', port: 8090 });
    expect(parseUiAddress('[::1]:8090')).toEqual({ ip: '::1', port: 8090 });
    expect(parseUiAddress('::1')).toEqual({ ip: '::1', port: 0 });
    expect(parseUiAddress('none')).toBeNull();
    for (const bad of ['localhost:80', '1.2.3.4:99999', '1.2.3.4:x', '']) expect(typeof parseUiAddress(bad)).toBe('string');
    expect(listenerUrl('0.0.0.0', 8090)).toBe('http://127.0.0.1:8090/');
    expect(listenerUrl('::1', 1)).toBe('http://[::1]:1/');
  });

  it('is a setting with a flag, an env variable and a default', async () => {
    const base = { env: {}, mdata: noMdata };
    expect((await resolveConfig({ ...base, flags: { dataDir: '/tmp/x' } })).uiAddress).toBeUndefined();
    expect((await resolveConfig({ ...base, flags: { dataDir: '/tmp/x', uiAddress: '127.0.0.2:0' } })).uiAddress).toEqual({ ip: '127.0.0.2', port: 0 });
    expect((await resolveConfig({ ...base, env: { MOCKCLOUD_UI_ADDRESS: 'none' }, flags: { dataDir: '/tmp/x' } })).uiAddress).toBeNull();
    await expect(resolveConfig({ ...base, flags: { dataDir: '/tmp/x', uiAddress: 'nowhere' } })).rejects.toThrow(/--ui-address/);
  });
});
