/**
 * `fwadm` in a command_execute script: what it prints on a CN for the firewall state the CN's
 * firewaller holds (taken into the snapshot; empty on a CN whose daemon has no FWAPI), through
 * the firewaller's own reading of it (agents/firewaller/fwadm.ts).
 */
import { fwadmOutput } from '../../firewaller/fwadm.js';
import type { GzCommand } from './types.js';

export const fwadm: GzCommand = (snapshot, args) =>
  fwadmOutput({ rules: snapshot.firewall?.rules ?? [], rvms: snapshot.firewall?.rvms ?? [], vms: snapshot.vms }, args);
