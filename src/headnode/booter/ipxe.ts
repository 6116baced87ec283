/**
 * The iPXE script booter writes for a CN (`boot.ipxe.01<MAC>` in its TFTP root, served over
 * HTTP too; sdc-booter lib/menulst.js buildIpxeCfg), for a SmartOS platform: the kernel of the
 * platform with the kernel flags and `-B` the kernel args (comma-separated `key=value`, then the
 * console), the platform's boot archive as the ramdisk, the boot modules, `boot`.
 */
import type { BootParams } from './boot-params.js';

/** The file name booter gives an iPXE client in its DHCP answer. */
export function ipxeFileName(mac: string): string {
  return `boot.ipxe.01${mac.replace(/:/g, '').toUpperCase()}`;
}

/** The kernel flags as booter writes them: sorted, `-k` for true, `-m value` for a value. */
function flagsText(flags: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const k of Object.keys(flags).sort()) {
    const v = flags[k];
    if (typeof v === 'boolean') {
      if (v) parts.push(k);
    } else parts.push(`${k} ${String(v)}`);
  }
  return parts.length > 0 ? `${parts.join(' ')} ` : '';
}

/** The OS console: the serial port when the boot params make it the default, else text (VGA). */
function consoleOf(p: BootParams): string {
  const serial = p.serial ?? 'ttyb';
  return p.default_console === 'serial' && serial !== 'none' ? serial : 'text';
}

export function buildIpxeScript(mac: string, p: BootParams, proto: 'http' | 'tftp' = 'http'): string {
  const kargs = Object.entries(p.kernel_args)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(',');
  const console = consoleOf(p);
  const kernel = `/os/${p.platform}/platform/i86pc/kernel/amd64/unix`;
  const archive = `/os/${p.platform}/platform/i86pc/amd64/boot_archive`;
  const lines = [
    '#!ipxe',
    `kernel ${proto}://\${next-server}${kernel} ${flagsText(p.kernel_flags ?? {})}-B ${kargs}${kargs === '' ? '' : ','}console=${console},${console}-mode="115200,8,n,1,-"`,
    `module ${proto}://\${next-server}${archive} type=rootfs name=ramdisk`,
  ];
  for (const m of p.boot_modules ?? []) {
    const mod = m as { path?: unknown };
    if (typeof mod.path === 'string') lines.push(`module ${proto}://\${next-server}/bootfs/${mac.replace(/:/g, '')}/${mod.path} type=file name=${mod.path}`);
  }
  lines.push('boot');
  return lines.join('\n');
}
