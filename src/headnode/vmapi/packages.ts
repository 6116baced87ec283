/**
 * `validatePackageValues` (sdc-vmapi lib/common/validation.js): the `billing_id` looked up in
 * PAPI as CreateVm and a resize do, a package PAPI does not have reported as a field error, the
 * package's brand checked, and what the caller did not give taken from the package (for
 * bhyve and KVM the disk is the image's and the RAM is `ram`; a flexible-disk bhyve package
 * gives `flexible_disk_size` instead of a quota), `cpu_shares` from the package's `fss` or
 * from the RAM. The package is left in `params.package`.
 */
import { HttpStatusError } from '../../common/http-client.js';
import { elem, type ErrorElem } from './errors.js';
import { relay, type Obj, type Peers } from './peers.js';
import type { P } from './validators.js';

/** Taken from the package where the caller did not give them; the RAM is set apart below. */
const PACKAGE_FIELDS = ['cpu_cap', 'max_lwps', 'max_swap', 'quota', 'vcpus', 'zfs_io_priority'];
/** Not global: VMAPI's `safeBrandName` removes the first such character only. */
const BRAND_NAME_DISALLOWED_CHARS_RE = /[^a-zA-Z-]/;
const BRAND_NAME_MAX_LENGTH = 64;

function safeBrandName(brand: string): string {
  return brand.replace(BRAND_NAME_DISALLOWED_CHARS_RE, '').slice(0, BRAND_NAME_MAX_LENGTH);
}

/**
 * The package's `max_physical_memory`, as sdc-vmapi's validatePackageValues leaves it: a bhyve
 * or KVM VM is sized by `ram`, so unless the caller gave `max_physical_memory` the package's
 * value becomes `ram` (over a caller's `ram`: VMAPI's loop writes it before its default step);
 * any other brand takes it as `max_physical_memory`, and `ram` too where the caller gave none.
 */
function applyPackageRam(params: P, pkgRam: unknown, hvm: boolean): void {
  if (pkgRam === undefined) return;
  const mib = Number(pkgRam);
  if (hvm && params.max_physical_memory === undefined) {
    params.ram = mib;
    return;
  }
  params.max_physical_memory ??= mib;
  params.ram ??= mib;
}

/** Adds its complaints to `errs`; throws what VMAPI relays (PAPI down, a 500). */
export async function validatePackageValues(peers: Peers, params: P, errs: ErrorElem[], reqId: string): Promise<void> {
  const lookup = peers.getPackage(String(params.billing_id), reqId);
  if (!lookup) return;
  let pkg: Obj;
  try {
    pkg = await lookup;
  } catch (err) {
    if (err instanceof HttpStatusError && err.statusCode === 404) {
      const body = err.body as { message?: unknown } | undefined;
      errs.push({ field: 'billing_id', code: 'Invalid', message: typeof body?.message === 'string' ? body.message : err.message });
      return;
    }
    throw relay(err);
  }
  const brand = String(params.brand);
  const hvm = brand === 'bhyve' || brand === 'kvm';
  if (pkg.brand !== undefined && pkg.brand !== brand) {
    errs.push(elem.invalid('brand', `Package requires brand "${safeBrandName(String(pkg.brand))}", but brand "${safeBrandName(brand)}" was specified`));
  }
  for (const field of PACKAGE_FIELDS) {
    if (params[field] !== undefined || pkg[field] === undefined) continue;
    if (field === 'quota') {
      if (hvm) {
        params.quota = 10;
        if (brand === 'bhyve' && pkg.flexible_disk) {
          params.flexible_disk_size = Number(pkg.quota);
          delete params.quota;
        }
      } else {
        params.quota = Number(pkg.quota) / 1024;
      }
    } else {
      params[field] = Number(pkg[field]);
    }
  }
  applyPackageRam(params, pkg.max_physical_memory, hvm);
  const pkgRam = params.max_physical_memory || params.ram;
  if (params.cpu_shares === undefined) {
    if (pkg.fss !== undefined) {
      params.cpu_shares = Math.floor(Number(pkg.fss));
      if (Number.isNaN(params.cpu_shares) || pkg.fss === '') {
        errs.push(elem.invalid('cpu_shares', 'Package has invalid "fss" (cpu_shares) value'));
      }
    } else {
      params.cpu_shares = Number(pkgRam) > 128 ? Math.floor(Number(pkgRam) / 128) : 1;
    }
  }
  params.package = pkg;
}
