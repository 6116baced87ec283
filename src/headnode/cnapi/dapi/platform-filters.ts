/**
 * DAPI's platform filters (sdc-designation lib/algorithms/hard-filter-platform-versions,
 * hard-filter-feature-min-platform): the minimum and maximum platforms an image, a package or a
 * feature of the VM asks of a server, per SDC version.
 */
import { vmOf, type DapiServer, type Obj, type Plugin, type Reasons } from './types.js';

/** Platform-version limits keyed by SDC version ("7.0": "20130122T122401Z"). */
function platformFilter(
  limits: Obj,
  servers: DapiServer[],
  what: string,
  reasons: Reasons,
  kind: 'min' | 'max',
): DapiServer[] {
  const valid: Record<string, string> = {};
  for (const [v, p] of Object.entries(limits)) if (/^\d+\.\d+$/.test(v)) valid[v] = String(p);
  const versions = Object.keys(valid).sort();
  const lowest = versions[0];
  const highest = versions[versions.length - 1];
  if (!highest || !lowest) return servers;
  return servers.filter((s) => {
    const version = String(s.sysinfo['SDC Version'] || '6.5');
    const platform = String(s.sysinfo['Live Image']);
    const limit = valid[version];
    const ok =
      kind === 'min'
        ? version > highest || (limit !== undefined && platform >= limit) || (!limit && lowest < version && version < highest)
        : version < lowest || (limit !== undefined && platform <= limit) || (!limit && lowest < version && version < highest);
    if (!ok) {
      reasons[s.uuid] = `${what} requires ${kind} platforms ${JSON.stringify(valid)}, but server has {"${version}":"${platform}"}`;
    }
    return ok;
  });
}

export const platformVersions: Plugin = {
  name: 'Servers which meet image manifest and package platform requirements',
  run: (servers, o) => {
    const reasons: Reasons = {};
    let out = servers;
    const pkgMin = o.pkg?.min_platform as Obj | undefined;
    if (pkgMin) out = platformFilter(pkgMin, out, 'Package', reasons, 'min');
    const reqs = o.img?.requirements as Obj | undefined;
    if (reqs?.min_platform) out = platformFilter(reqs.min_platform as Obj, out, 'Image', reasons, 'min');
    if (reqs?.max_platform) out = platformFilter(reqs.max_platform as Obj, out, 'Image', reasons, 'max');
    return { servers: out, reasons };
  },
};

export const featureMinPlatform: Plugin = {
  name: "Servers which meet various features' platform requirements",
  run: (servers, o) => {
    const vm = vmOf(o);
    const d = o.defaults;
    const reasons: Reasons = {};
    let out = servers;
    const need = (platform: string | undefined, what: string, when: boolean): void => {
      if (when && platform) out = platformFilter({ '7.0': platform }, out, what, reasons, 'min');
    };
    const md = vm.internal_metadata as Obj | undefined;
    need(d.filter_docker_min_platform, 'Docker support', Boolean(vm.docker));
    need(d.filter_docker_nfs_volumes_automount_min_platform, 'Docker volume automount support', Boolean(vm.docker && vm.volumes));
    need(d.filter_non_docker_nfs_volumes_automount_min_platform, 'Non-docker volume automount support', Boolean(!vm.docker && vm.volumes));
    need(d.filter_volapi_nfs_v2_min_platform, 'volapi nfs v2 support', md?.['volapi-nfs-version'] === 2);
    need(d.filter_flexible_disk_min_platform, 'Flexible disk size support', Boolean(vm.flexible_disk_size));
    return { servers: out, reasons };
  },
};
