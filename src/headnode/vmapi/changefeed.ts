/**
 * VMAPI's changefeed (sdc-vmapi server.js `changefeed.createPublisher`, lib/apis/moray.js
 * `putVm` / `computeDiff`, lib/common/util.js `publishChange`): every VM put publishes a `vm`
 * change naming the top-level fields that differ from the stored VM, with the VM as
 * `resourceObject`. Listeners register for the subresources of SAPI's VMAPI template.
 */
import { isDeepStrictEqual } from 'node:util';
import type { ChangeItem, ResourceConfig } from '../../common/changefeed/protocol.js';
import { translateVm, type VmObject } from './translate.js';

export const VMAPI_CHANGEFEED_RESOURCES: ResourceConfig[] = [
  {
    bootstrapRoute: '/vms',
    resource: 'vm',
    subResources: ['alias', 'customer_metadata', 'destroyed', 'internal_metadata', 'nics', 'owner_uuid', 'server_uuid', 'state', 'tags'],
  },
];

/** `computeDiff`: the top-level fields that differ between the two normalised VMs. */
export function vmDiff(oldVm: VmObject | undefined, newVm: VmObject): string[] {
  const a = translateVm(oldVm ?? { uuid: newVm.uuid }, false) as Record<string, unknown>;
  const b = translateVm(newVm, false) as Record<string, unknown>;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].filter((k) => !isDeepStrictEqual(a[k], b[k]));
}

/** The change item VMAPI publishes for a put, or undefined when nothing changed. */
export function vmChange(oldVm: VmObject | undefined, newVm: VmObject): ChangeItem | undefined {
  const diffs = vmDiff(oldVm, newVm);
  if (diffs.length === 0) return undefined;
  return {
    changeKind: { resource: 'vm', subResources: diffs },
    changedResourceId: newVm.uuid,
    resourceObject: translateVm(newVm, false),
  };
}
