/**
 * The placement flags create-servers, ensure-servers and set-servers share: what DAPI reads
 * from CNAPI for each CN (traits, reserved, reservoir, overprovision ratios), as an operator
 * sets them with `sdc-server update` (CNAPI ServerUpdate, sdc-cnapi lib/endpoints/servers.js).
 */
import type { Argv } from 'yargs';
import { OVERPROVISION_KEYS, type Placement } from '../mockcn/profiles.js';
import { UsageError } from './daemon-client.js';

export interface PlacementArgs {
  traits?: string;
  reserved?: boolean;
  reservoir?: boolean;
  'overprovision-ratios'?: string;
}

export function withPlacement<T>(y: Argv<T>, when: string): Argv<T & PlacementArgs> {
  return y
    .option('traits', { type: 'string', describe: `CNAPI traits ${when}, as JSON (e.g. '{"ssd": true}'); DAPI only places VMs asking for them there` })
    .option('reserved', { type: 'boolean', describe: `reserved in CNAPI ${when} (--reserved or --reserved false): DAPI places nothing there` })
    .option('reservoir', { type: 'boolean', describe: `reservoir in CNAPI ${when}: DAPI uses it only when no other CN fits` })
    .option('overprovision-ratios', {
      type: 'string',
      describe: `CNAPI overprovision ratios ${when}: KEY=N,... with keys ${OVERPROVISION_KEYS.join(', ')} (e.g. cpu=4,ram=1)`,
    }) as Argv<T & PlacementArgs>;
}

/** The placement the flags ask for; undefined when none was given. A bad value is a usage error. */
export function placementOf(argv: PlacementArgs): Placement | undefined {
  const out: Placement = {};
  if (argv.traits !== undefined) {
    let traits: unknown;
    try {
      traits = JSON.parse(argv.traits);
    } catch {
      throw new UsageError(`--traits must be a JSON object, like '{"ssd": true}', not ${JSON.stringify(argv.traits)}`);
    }
    if (typeof traits !== 'object' || traits === null || Array.isArray(traits)) {
      throw new UsageError(`--traits must be a JSON object, like '{"ssd": true}', not ${argv.traits}`);
    }
    out.traits = traits as Record<string, unknown>;
  }
  if (argv.reserved !== undefined) out.reserved = argv.reserved;
  if (argv.reservoir !== undefined) out.reservoir = argv.reservoir;
  const ratios = argv['overprovision-ratios'];
  if (ratios !== undefined) {
    const parsed: NonNullable<Placement['overprovisionRatios']> = {};
    for (const part of ratios.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
      const m = /^([a-z]+)\s*[=:]\s*([0-9]+(?:\.[0-9]+)?)$/.exec(part);
      if (!m || !(OVERPROVISION_KEYS as readonly string[]).includes(m[1]!)) {
        throw new UsageError(`--overprovision-ratios: ${JSON.stringify(part)} is not KEY=N with a key of ${OVERPROVISION_KEYS.join(', ')}`);
      }
      parsed[m[1] as keyof typeof parsed] = Number(m[2]);
    }
    if (Object.keys(parsed).length === 0) throw new UsageError('--overprovision-ratios names no ratio');
    out.overprovisionRatios = parsed;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
