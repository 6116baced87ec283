/**
 * vmadm's memory rules, for create and update:
 * - `ram` sets max_physical_memory (plus the brand's overhead for bhyve/kvm);
 * - max_locked_memory and max_swap follow max_physical_memory, keeping the deltas they
 *   had before an update; max_swap is never below 256 MiB;
 * - then clamp: max_locked_memory <= max_physical_memory <= max_swap, and hardware VMs
 *   get at least ram + 256 MiB.
 * `ram` itself is kept only for hardware VMs (the dummy backend and vmadm agree on that).
 */
import { HVM_BRANDS } from './properties.js';

const MINIMUM_MAX_SWAP = 256;
const DEFAULT_RAM = 256;
const MIN_HVM_OVERHEAD = 256;
const HVM_OVERHEAD: Readonly<Record<string, number>> = { bhyve: 1024 + 256, kvm: 1024 };

export interface MemoryFields {
  ram?: number;
  max_physical_memory?: number;
  max_locked_memory?: number;
  max_swap?: number;
}

const KEYS = ['ram', 'max_physical_memory', 'max_locked_memory', 'max_swap'] as const;

/**
 * The memory fields after applying `req` (numbers already validated) to `current`
 * (undefined on create). Returns only the four fields, complete.
 */
export function resolveMemory(brand: string, req: MemoryFields, current: MemoryFields | undefined): MemoryFields {
  const hvm = HVM_BRANDS.includes(brand);
  const want: MemoryFields = { ...req };
  if (!current && want.ram === undefined && want.max_physical_memory === undefined) want.ram = DEFAULT_RAM;
  if (!current && want.ram === undefined && hvm) want.ram = DEFAULT_RAM;

  if (want.ram !== undefined && want.max_physical_memory === undefined) {
    want.max_physical_memory = want.ram + (hvm ? (HVM_OVERHEAD[brand] ?? 0) : 0);
  }
  const old = current ?? {};
  if (want.max_physical_memory !== undefined) {
    const phys = want.max_physical_memory;
    if (want.max_locked_memory === undefined) {
      want.max_locked_memory =
        old.max_locked_memory !== undefined && old.max_physical_memory !== undefined
          ? phys - (old.max_physical_memory - old.max_locked_memory)
          : phys;
    }
    if (want.max_swap === undefined) {
      if (old.max_swap !== undefined && old.max_physical_memory !== undefined) {
        // A swap that was only raised to the minimum follows ram again.
        want.max_swap =
          old.max_swap === MINIMUM_MAX_SWAP && phys >= MINIMUM_MAX_SWAP
            ? phys
            : phys + (old.max_swap - old.max_physical_memory);
      } else {
        want.max_swap = phys;
      }
      if (want.max_swap < MINIMUM_MAX_SWAP) want.max_swap = MINIMUM_MAX_SWAP;
    }
  }

  const out: MemoryFields = {};
  for (const k of KEYS) {
    const v = want[k] ?? old[k];
    if (v !== undefined) out[k] = v;
  }
  if (hvm && out.ram !== undefined) {
    const floor = out.ram + MIN_HVM_OVERHEAD;
    if (out.max_physical_memory === undefined || out.max_physical_memory < floor) out.max_physical_memory = floor;
    if (out.max_locked_memory === undefined || out.max_locked_memory < floor) out.max_locked_memory = floor;
  }
  if (out.max_physical_memory !== undefined) {
    if (out.max_locked_memory !== undefined && out.max_locked_memory > out.max_physical_memory) {
      out.max_locked_memory = out.max_physical_memory;
    }
    if (out.max_swap !== undefined && out.max_swap < out.max_physical_memory) out.max_swap = out.max_physical_memory;
  }
  if (!hvm) delete out.ram;
  return out;
}

/** vmadm's default for max_msg_ids, max_sem_ids and max_shm_ids (VM.js DEFAULT_MAX_*_IDS). */
export const DEFAULT_MAX_IDS = 4096;
const ID_KEYS = ['max_msg_ids', 'max_sem_ids', 'max_shm_ids'] as const;

/**
 * The tmpfs and shared-memory controls that follow a memory change (VM.js
 * fixPayloadMemory): `newPhys` is the payload's max_physical_memory (given, or from ram),
 * undefined when the payload changes no memory; `tmpfs` the payload's tmpfs; `current` the
 * VM before an update (undefined on create). A tmpfs above max_physical_memory is clamped
 * to it; without one, zone brands get a tmpfs that keeps its ratio to max_physical_memory
 * (or equals it); max_shm_memory and the IPC id limits are filled in when the VM has none.
 */
export function memoryControls(
  useTmpfs: boolean,
  newPhys: number | undefined,
  tmpfs: number | undefined,
  current: Readonly<Record<string, unknown>> | undefined,
): Record<string, number> {
  const out: Record<string, number> = {};
  const curPhys = typeof current?.max_physical_memory === 'number' ? current.max_physical_memory : undefined;
  const curTmpfs = typeof current?.tmpfs === 'number' ? current.tmpfs : undefined;
  if (tmpfs !== undefined) {
    if (newPhys !== undefined && tmpfs > newPhys) out.tmpfs = newPhys;
    else if (newPhys === undefined && curPhys !== undefined && tmpfs > curPhys) out.tmpfs = curPhys;
    else out.tmpfs = tmpfs;
  } else if (newPhys !== undefined && useTmpfs) {
    out.tmpfs = curPhys !== undefined && curTmpfs !== undefined && curPhys > 0 ? Math.round((curTmpfs / curPhys) * newPhys) : newPhys;
  }
  if (newPhys !== undefined) {
    if (current?.max_shm_memory === undefined) out.max_shm_memory = newPhys;
    for (const k of ID_KEYS) if (current?.[k] === undefined) out[k] = DEFAULT_MAX_IDS;
  }
  return out;
}
