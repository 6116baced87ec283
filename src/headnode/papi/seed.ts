/**
 * The packages a fresh DC's PAPI holds.
 *
 * - The `sdc_*` packages of the headnode's configuration (sdc-headnode
 *   config/config.inc/generic `pkg_N=name:ram:swap:disk:cap:nlwp:iopri:uuid`), which PAPI's
 *   first boot loads straight into its bucket without validating them (sdc-papi boot/setup.sh
 *   writes them, lib/papi.js createSDCPackages): owned by the admin user, `vcpus` 1, version
 *   1.0.0, active, `sdc_128` the default, and `cpu_cap` a string, as setup.sh quotes it.
 * - The `sample-*` packages of `sdcadm post-setup dev-sample-data` (sdcadm
 *   etc/sample-packages.json), which a development DC adds through PAPI's CreatePackage.
 */
import type { Pkg } from './schema.js';

/** name, ram, swap, disk (MiB), cpu_cap, max_lwps, zfs_io_priority, uuid. */
type SdcPackageRow = [string, number, number, number, number, number, number, string];

const SDC_PACKAGES: SdcPackageRow[] = [
  ['sdc_64', 64, 256, 25600, 100, 1000, 10, '0ea54d9d-8d4d-4959-a87e-bf47c0f61a47'],
  ['sdc_128', 128, 256, 25600, 100, 1000, 10, '73a1ca34-1e30-48c7-8681-70314a9c67d3'],
  ['sdc_256', 256, 512, 25600, 150, 1000, 10, '78aa629d-04fc-4ee5-881b-0b4a914e0c52'],
  ['sdc_512', 512, 1024, 25600, 200, 1000, 10, '5dd022c8-5388-43e3-9fdd-536df4ea4f9f'],
  ['sdc_768', 768, 1536, 25600, 250, 1000, 10, '1ee2a2ab-2138-8542-b563-a67bb03792f7'],
  ['sdc_1024', 1024, 2048, 25600, 300, 1000, 10, '4769a8f9-de51-4c1e-885f-c3920cc68137'],
  ['sdc_2048', 2048, 4096, 25600, 400, 1000, 20, '8d205d81-3672-4297-b80f-7822eb6c998b'],
  ['sdc_db', 2048, 4096, 51200, 400, 1000, 20, 'b2cd4ca7-ad7f-4a98-adeb-7adc9978a875'],
  ['sdc_imgapi', 768, 1536, 512000, 250, 1000, 10, '5dfe2cc2-cea2-0841-8e01-6cafbe5b7dbc'],
  ['sdc_4096', 4096, 8192, 25600, 400, 1000, 20, '0ae33ebc-c216-11e2-9b84-6f7e2a82bc36'],
  ['sdc_8192', 8192, 16384, 25600, 400, 1000, 20, '16425b42-b818-11e2-90d4-87477f18a688'],
  ['sdc_rabbitmq', 2048, 10240, 25600, 400, 1000, 20, 'dd16ed2f-e751-48f1-a5a4-571f93c8e65d'],
];

/** What PAPI's first boot stores for the `sdc_*` packages (no validation, no API defaults). */
export function sdcPackages(adminUuid: string): Pkg[] {
  return SDC_PACKAGES.map(([name, ram, swap, disk, cap, nlwp, iopri, uuid]) => ({
    uuid,
    active: true,
    cpu_cap: String(cap),
    default: name === 'sdc_128',
    max_lwps: nlwp,
    max_physical_memory: ram,
    max_swap: swap,
    name,
    quota: disk,
    vcpus: 1,
    version: '1.0.0',
    zfs_io_priority: iopri,
    owner_uuids: [adminUuid],
  }));
}

/** name, ram, swap, quota, zfs_io_priority and fss, cpu_cap, default, extra attributes. */
type SampleRow = [string, number, number, number, number, number, boolean, Pkg?];

const BHYVE_FLEX: Pkg = { brand: 'bhyve', flexible_disk: true };

const SAMPLE_PACKAGES: SampleRow[] = [
  ['sample-128M', 128, 512, 3072, 8, 25, false],
  ['sample-256M', 256, 1024, 6144, 16, 25, false],
  ['sample-512M', 512, 2048, 12288, 32, 50, false],
  ['sample-1G', 1024, 4096, 25600, 64, 100, true],
  ['sample-2G', 2048, 8192, 51200, 128, 200, false],
  ['sample-4G', 4096, 16384, 102400, 256, 400, false],
  ['sample-8G', 8192, 32768, 204800, 512, 800, false],
  ['sample-16G', 16384, 65536, 409600, 1024, 1600, false],
  ['sample-32G', 32768, 131072, 819200, 2048, 3200, false],
  ['sample-64G', 65536, 262144, 1638400, 4096, 6400, false],
  ['sample-bhyve-flexible-1G', 1024, 4096, 24576, 64, 100, true, BHYVE_FLEX],
  ['sample-bhyve-reserved-snapshots-space', 1024, 4096, 40960, 64, 100, true, { ...BHYVE_FLEX, disks: [{}, { size: 10240 }] }],
  ['sample-bhyve-three-disks', 1024, 4096, 24576, 64, 100, true, { ...BHYVE_FLEX, disks: [{}, { size: 6144 }, { size: 'remaining' }] }],
];

/** The CreatePackage bodies dev-sample-data sends (each gets a new uuid). */
export function samplePackages(): Pkg[] {
  return SAMPLE_PACKAGES.map(([name, ram, swap, quota, prio, cap, isDefault, extra]) => ({
    name,
    version: '1.0.0',
    active: true,
    max_lwps: 4000,
    max_physical_memory: ram,
    max_swap: swap,
    quota,
    zfs_io_priority: prio,
    fss: prio,
    cpu_cap: cap,
    billing_tag: name,
    default: isDefault,
    vcpus: 1,
    ...structuredClone(extra ?? {}),
  }));
}
