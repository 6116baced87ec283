/**
 * State transitions of `vmadm start/stop/reboot/kill/reprovision`, as pure steps on a
 * stored VM. A multi-step operation (reboot, reprovision, rollback) is written step by
 * step, so consumers see the intermediate states a real CN shows (shutting_down,
 * provisioning) as separate events.
 *
 * Unlike the dummy backend, a start sets a fresh boot_timestamp, a stop records
 * exit_status/exit_timestamp and drops boot_timestamp (and with it pid/zoneid), and
 * operations check the current state the way vmadm does: starting a running VM and
 * stopping a stopped one succeed without a change (the real vmadm exits 0 there).
 */
import { MockcloudError } from '../common/errors.js';
import { badState, invalidValue, unsupported } from './errors.js';
import { BRAND_FEATURES, HVM_BRANDS } from './properties.js';
import type { VmStage } from './types.js';

export type Stored = Record<string, unknown>;
/** One write of a multi-step operation: mutates a fresh copy of the stored VM. */
export type Step = (vm: Stored, now: Date) => void;
/** Time a real VM spends between two writes (the timing profile's draw). */
export interface Pause {
  pauseMs: number;
}
/** A multi-step operation: writes, and the time between them. */
export type PlanItem = Step | Pause;
/** How long a stage takes for the VM being changed (0: no time; see VmPacer). */
export type Pace = (stage: VmStage) => number;

const noPace: Pace = () => 0;
const pause = (ms: number): Pause[] => (ms > 0 ? [{ pauseMs: ms }] : []);

/** VM.js STOP_TIMEOUT: a zone's shutdown is waited on this long, then the zone is halted. */
export const STOP_TIMEOUT_SECONDS = 60;
/** VM.js stop's default timeouts: docker containers (like docker), bhyve and KVM guests. */
export const DOCKER_STOP_TIMEOUT_SECONDS = 10;
export const HVM_STOP_TIMEOUT_SECONDS = 180;

/**
 * How long the guest's shutdown runs before vmadm stops waiting and halts the zone: the
 * `timeout` given (docker, bhyve, KVM: VM.js doTermStop / doVmadmdStop), else their defaults;
 * a plain zone's `shutdown -i 5` is waited on for STOP_TIMEOUT.
 */
export function stopTimeoutMs(vm: Stored, timeout: number | undefined): number {
  const hvm = HVM_BRANDS.includes(String(vm.brand));
  if (vm.docker === true) return (timeout ?? DOCKER_STOP_TIMEOUT_SECONDS) * 1000;
  if (hvm) return (timeout ?? HVM_STOP_TIMEOUT_SECONDS) * 1000;
  return STOP_TIMEOUT_SECONDS * 1000;
}

/** The guest asked to shut down: `stopping` for HVM (the zone still runs), else shutting_down. */
function shutdownBegins(vm: Stored): Step {
  return HVM_BRANDS.includes(String(vm.brand))
    ? (s) => {
        s.state = 'stopping';
        s.zone_state = 'running';
      }
    : shuttingDownStep;
}

const shuttingDownStep: Step = (vm) => {
  vm.state = 'shutting_down';
  vm.zone_state = 'shutting_down';
};

/** The zone's init gone, the zone not yet released (vmadm(8): down). */
const downStep: Step = (vm) => {
  vm.state = 'down';
  vm.zone_state = 'down';
};

/** The zone readied for its boot: file systems mounted, no process yet. */
const readyStep: Step = (vm) => {
  vm.state = 'ready';
  vm.zone_state = 'ready';
};

/**
 * A timed shutdown: the guest takes its draw, cut at the stop timeout (then the zone is
 * halted as vmadm does), then the zone goes down. Empty when nothing takes time.
 */
function timedShutdown(vm: Stored, pace: Pace, timeout: number | undefined): PlanItem[] {
  const guest = Math.min(pace('shutdown'), stopTimeoutMs(vm, timeout));
  const halt = pace('halt');
  if (guest <= 0 && halt <= 0) return [];
  return [shutdownBegins(vm), ...pause(guest), ...(halt > 0 ? [downStep, ...pause(halt)] : [])];
}

/**
 * `vmadm start`: a running VM is left as it is (VM.js answers EALREADYRUNNING and vmadm
 * exits 0 with that message, so node-vmadm and cn-agent see success); other states but
 * stopped are refused with VM.js's message.
 */
export function startSteps(vm: Stored, pace: Pace = noPace): PlanItem[] {
  if (vm.state === 'running') return [];
  if (vm.state !== 'stopped') {
    throw badState(`Cannot start vm from state "${String(vm.state)}", must be "stopped".`);
  }
  return [...timedBoot(pace), bootStep];
}

/** The zone readied, then booting for its draw (nothing when the boot takes no time). */
function timedBoot(pace: Pace): PlanItem[] {
  const boot = pace('boot');
  return boot > 0 ? [readyStep, ...pause(boot)] : [];
}

export const bootStep: Step = (vm, now) => {
  vm.autoboot = true;
  vm.state = 'running';
  delete vm.zone_state;
  vm.boot_timestamp = now.toISOString();
};

/**
 * `vmadm stop`: a VM that is not running is not an error (VM.js answers ENOTRUNNING and
 * vmadm exits 0). A plain stop first sets autoboot=false, so a stopped VM keeps that
 * change; `-F` (force) halts straight away and changes nothing on a halted zone.
 */
export function stopSteps(vm: Stored, force: boolean, pace: Pace = noPace, timeout?: number): PlanItem[] {
  if (vm.state === 'running') {
    if (force) {
      const halt = pace('halt');
      return halt > 0 ? [shuttingDownStep, ...pause(halt), haltStep] : [haltStep];
    }
    return [...timedShutdown(vm, pace, timeout), haltStep];
  }
  if (force || vm.autoboot === false) return [];
  return [
    (s) => {
      s.autoboot = false;
    },
  ];
}

function halted(vm: Stored, now: Date, exitStatus: number): void {
  vm.state = 'stopped';
  delete vm.zone_state;
  delete vm.boot_timestamp;
  vm.exit_status = exitStatus;
  vm.exit_timestamp = now.toISOString();
}

/**
 * The zone's init died (a crash): zoneadmd records init's exit in the zone's `lastexited`,
 * which vmadm reports as exit_status / exit_timestamp, and the zone is down. autoboot is
 * left as it is: nobody asked for a stop.
 */
export function crashSteps(exitStatus: number): Step[] {
  return [(vm, now) => halted(vm, now, exitStatus)];
}

export const haltStep: Step = (vm, now) => {
  vm.autoboot = false;
  halted(vm, now, 0);
};

/**
 * The zone goes down with its host (the zones service halting it as the CN shuts down):
 * shutting_down, then stopped with exit status 0. Unlike `vmadm stop`, autoboot is left as it
 * is: it decides whether the zone comes back when the host boots.
 */
export function hostHaltSteps(vm: Stored, pace: Pace = noPace): PlanItem[] {
  const guest = Math.min(pace('shutdown'), stopTimeoutMs(vm, undefined));
  return [shuttingDownStep, ...pause(guest), (s, now) => halted(s, now, 0)];
}

/**
 * `vmadm reboot` (VM.js reboot): a running VM goes down and up; a stopped docker container
 * is simply started; any other state is refused with VM.js's message.
 */
export function rebootPlan(vm: Stored, pace: Pace = noPace, timeout?: number): PlanItem[] {
  if (vm.state === 'running') {
    const down = timedShutdown(vm, pace, timeout);
    const up = timedBoot(pace);
    // A zone reboot goes down and is readied again without reaching installed (stopped).
    return down.length === 0 && up.length === 0 ? rebootSteps : [...(down.length ? down : [shuttingDownStep]), ...(up.length ? up : [readyStep]), bootStep];
  }
  if (vm.docker === true && vm.state === 'stopped') return [...timedBoot(pace), bootStep];
  throw badState(`Cannot reboot vm from state "${String(vm.state)}", must be "running"`);
}

/** shutting_down → stopped → running, like a zone reboot seen through vminfod. */
export const rebootSteps: Step[] = [
  (vm) => {
    vm.state = 'shutting_down';
    vm.zone_state = 'shutting_down';
  },
  (vm, now) => halted(vm, now, 0),
  bootStep,
];

const SIGNALS: Readonly<Record<string, number>> = {
  SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGUSR1: 16, SIGUSR2: 17, SIGTERM: 15,
  SIGCHLD: 18, SIGWINCH: 20, SIGCONT: 25, SIGSTOP: 23, SIGTSTP: 24,
};
/** Signals whose default action ends init, and with it the zone. */
const TERMINATING = new Set([1, 2, 3, 9, 15]);

/** Parse a kill signal: "SIGKILL", "KILL", "9" or 9; vmadm's default is SIGTERM. */
export function parseSignal(signal: unknown): number {
  if (signal === undefined || signal === null || signal === '') return SIGNALS.SIGTERM!;
  if (typeof signal === 'number' || (typeof signal === 'string' && /^\d+$/.test(signal))) {
    const n = Number(signal);
    if (Number.isInteger(n) && n >= 0 && n < 64) return n;
  } else if (typeof signal === 'string') {
    const name = signal.toUpperCase().startsWith('SIG') ? signal.toUpperCase() : `SIG${signal.toUpperCase()}`;
    const n = SIGNALS[name];
    if (n !== undefined) return n;
  }
  throw invalidValue('signal', `unknown signal ${JSON.stringify(signal)}`);
}

export function checkKillable(vm: Stored): void {
  if ((vm.zone_state ?? vm.state) !== 'running') {
    throw badState(`Cannot find running init PID for VM ${String(vm.uuid)}`);
  }
}

/** A signal that ends init halts the zone (exit status 128+signal); others change nothing. */
export function killSteps(signo: number): Step[] {
  if (!TERMINATING.has(signo)) return [];
  return [(vm, now) => halted(vm, now, 128 + signo)];
}

/**
 * reprovision (smartos-live src/vm/node_modules/VM.js exports.reprovision): a running VM is
 * stopped first (VM.stop: shutting_down, the zone down, stopped), then the provisioning
 * transition is set (state provisioning, the zone installed), the new image installed, the
 * zone readied and booted, and once its provisioning is done it is running. VM.js installs
 * with autoboot, so the VM always ends running (and autoboot true), whatever it was before.
 */
export function reprovisionSteps(prevState: string, imageUuid: string, vm0: Stored = {}, pace: Pace = noPace): PlanItem[] {
  const steps: PlanItem[] = [];
  if (prevState === 'running') {
    const down = timedShutdown(vm0, pace, undefined);
    steps.push(...(down.length ? down : [shuttingDownStep]), haltStep);
  }
  steps.push((vm) => {
    vm.state = 'provisioning';
    vm.zone_state = 'installed';
  });
  steps.push(...pause(pace('install')));
  steps.push((vm) => {
    vm.image_uuid = imageUuid;
  });
  steps.push(...timedBoot(pace).map((item) => (isPause(item) ? item : provisioningReady)));
  steps.push((vm, now) => {
    vm.zone_state = 'running';
    vm.boot_timestamp = now.toISOString();
  });
  steps.push(...pause(pace('provision')));
  steps.push((vm) => {
    vm.state = 'running';
    vm.autoboot = true;
    delete vm.zone_state;
  });
  return steps;
}

/** The zone readied for its boot while the provisioning transition holds the VM's state. */
const provisioningReady: Step = (vm) => {
  vm.state = 'provisioning';
  vm.zone_state = 'ready';
};

/** VM.js reprovision's refusals, with its messages. */
export function checkReprovisionable(vm: Stored): void {
  if (BRAND_FEATURES[String(vm.brand)]?.reprovision !== true) {
    throw unsupported(`brand "${String(vm.brand)}" does not yet support reprovision`);
  }
  if (vm.indestructible_zoneroot === true) {
    throw new MockcloudError('Conflict', 'indestructible_zoneroot is set, cannot reprovision');
  }
  if (Array.isArray(vm.datasets) && vm.datasets.length > 1) {
    throw unsupported('cannot support reprovision with multiple delegated datasets');
  }
  if (vm.state !== 'running' && vm.state !== 'stopped') {
    throw badState(`Cannot reprovision vm from state "${String(vm.state)}", must be "running" or "stopped".`);
  }
}

export function checkDeletable(vm: Stored): void {
  if (vm.indestructible_zoneroot === true) {
    throw new MockcloudError('Conflict', 'indestructible_zoneroot is set, cannot delete');
  }
  if (vm.indestructible_delegated === true) {
    throw new MockcloudError('Conflict', 'indestructible_delegated is set, cannot delete');
  }
}

/**
 * A new VM's provisioning on a real CN (vmadm(8) VM STATES): state provisioning while the
 * zone is configured, installed, readied, booted and its provisioning scripts run; then
 * running (or, with autoboot false, stopped once installed). `final` is the VM as it is once
 * provisioned; the first write is the configured zone. Undefined when nothing takes time:
 * the VM is then written once, as it ends.
 */
export function provisionPlan(final: Stored, pace: Pace): { first: Stored; rest: PlanItem[] } | undefined {
  const install = pace('install');
  const autoboot = final.state === 'running';
  const boot = autoboot ? pace('boot') : 0;
  const provision = autoboot ? pace('provision') : 0;
  if (install <= 0 && boot <= 0 && provision <= 0) return undefined;
  const first: Stored = { ...final, state: 'provisioning', zone_state: 'configured' };
  delete first.boot_timestamp;
  delete first.exit_status;
  delete first.exit_timestamp;
  const rest: PlanItem[] = [
    ...pause(install),
    (vm) => {
      vm.zone_state = 'installed';
    },
  ];
  if (!autoboot) {
    rest.push((vm) => {
      vm.state = 'stopped';
      delete vm.zone_state;
      vm.exit_status = final.exit_status ?? 0;
      vm.exit_timestamp = final.exit_timestamp;
    });
    return { first, rest };
  }
  rest.push(...pause(boot), (vm, now) => {
    vm.zone_state = 'running';
    vm.boot_timestamp = now.toISOString();
  });
  rest.push(...pause(provision), (vm) => {
    vm.state = 'running';
    delete vm.zone_state;
  });
  return { first, rest };
}

/** A VM's destruction: a running zone halted first, then uninstalled (the time before its file goes). */
export function destroyPauseMs(vm: Stored, pace: Pace): { haltMs: number; uninstallMs: number } {
  return { haltMs: vm.state === 'running' ? pace('halt') : 0, uninstallMs: pace('uninstall') };
}

export function isPause(item: PlanItem): item is Pause {
  return typeof item !== 'function';
}

export { shuttingDownStep };
