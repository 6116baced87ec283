/**
 * Fake SmartOS commands for running the ops scripts on Linux: small bash scripts on PATH that
 * record every call and act on a state dir, so a test can set up mdata, watch SMF state change
 * and see exactly which commands the script under test ran.
 *
 * State dir layout:
 *   calls.log              one line per call: the command name and its args, tab-separated
 *   mdata/<key>            an mdata value (absent = unset)
 *   svc/<fmri>             an SMF instance's state ("/" and ":" in the FMRI become "_")
 *   zfs-mountpoint         the delegated dataset's mountpoint (absent = no such dataset)
 */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const RECORD = `record() {
    local line=$(basename "$0") a
    for a in "$@"; do line+=$'\\t'"$a"; done
    printf '%s\\n' "$line" >>"$FAKE_STATE/calls.log"
}
svc_file() { printf '%s/svc/%s' "$FAKE_STATE" "$(printf '%s' "$1" | tr '/:' '__')"; }
`;

/** Every fake, by command name. Behaviour knobs are environment variables named FAKE_*. */
export const FAKE_SCRIPTS: Record<string, string> = {
  'mdata-get': `record "$@"
f="$FAKE_STATE/mdata/$1"
if [[ -f $f ]]; then cat "$f"; echo; exit 0; fi
echo "No metadata for '$1'" >&2; exit 1`,

  'mdata-put': `record "$@"
mkdir -p "$FAKE_STATE/mdata"; printf '%s' "$2" >"$FAKE_STATE/mdata/$1"`,

  // svcs [-H] [-o state] FMRI: the state, or "doesn't match" for an unknown service.
  svcs: `record "$@"
fmri=\${@: -1}; f=$(svc_file "$fmri")
if [[ -f $f ]]; then cat "$f"; exit 0; fi
echo "svcs: Pattern '$fmri' doesn't match any instances" >&2; exit 1`,

  // svccfg import MANIFEST: creates <service name>:default, disabled unless the manifest's
  // create_default_instance says enabled (then online). svccfg -s FMRI ...: recorded only.
  svccfg: `record "$@"
if [[ $1 == import ]]; then
    name=$(sed -n 's/.*<service name="\\([^"]*\\)".*/\\1/p' "$2" | head -n 1)
    [[ -n $name ]] || { echo "svccfg: no service in $2" >&2; exit 1; }
    state=disabled
    grep -q '<create_default_instance enabled="true"' "$2" && state=online
    mkdir -p "$FAKE_STATE/svc"; echo "$state" >"$(svc_file "svc:/$name:default")"
fi
exit 0`,

  // svcadm enable|disable [-s]|clear|refresh FMRI. enable goes to $FAKE_ENABLE_STATE
  // (default online); clear goes to online.
  svcadm: `record "$@"
verb=$1; shift; fmri=\${@: -1}; f=$(svc_file "$fmri")
[[ -f $f ]] || { echo "svcadm: Pattern '$fmri' doesn't match any instances" >&2; exit 1; }
case $verb in
enable) echo "\${FAKE_ENABLE_STATE:-online}" >"$f" ;;
disable) echo disabled >"$f" ;;
clear) echo online >"$f" ;;
esac
exit 0`,

  mockcloud: `record "$@"
exit \${FAKE_MOCKCLOUD_RC:-0}`,

  zonename: `record "$@"
echo \${FAKE_ZONENAME:-global}`,

  // zfs get -H -o value mountpoint DS | zfs set mountpoint=X DS
  zfs: `record "$@"
f="$FAKE_STATE/zfs-mountpoint"
case $1 in
get) [[ -f $f ]] || { echo "cannot open '\${@: -1}': dataset does not exist" >&2; exit 1; }; cat "$f" ;;
set) [[ -f $f ]] || exit 1; echo "\${2#mountpoint=}" >"$f" ;;
esac
exit 0`,
};

export interface FakeWorld {
  /** Temp dir holding bin/, state/ and root/ (a root prefix for the script under test). */
  dir: string;
  bin: string;
  state: string;
  root: string;
  /** Environment for the script: PATH with the fakes first, FAKE_STATE. */
  env: NodeJS.ProcessEnv;
  setMdata(key: string, value: string | undefined): Promise<void>;
  getMdata(key: string): Promise<string | undefined>;
  svcState(fmri: string): Promise<string | undefined>;
  setSvcState(fmri: string, state: string): Promise<void>;
  /** Every recorded call as [command, ...args]. */
  calls(): Promise<string[][]>;
  callsOf(command: string): Promise<string[][]>;
  clearCalls(): Promise<void>;
  cleanup(): Promise<void>;
}

/** A temp dir with the named fakes (all by default) on PATH ahead of the real PATH. */
export async function makeFakeWorld(commands: string[] = Object.keys(FAKE_SCRIPTS)): Promise<FakeWorld> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-ops-'));
  const bin = path.join(dir, 'bin');
  const state = path.join(dir, 'state');
  const root = path.join(dir, 'root');
  await mkdir(state);
  await Promise.all([mkdir(bin), mkdir(path.join(state, 'mdata')), mkdir(path.join(state, 'svc')), mkdir(root)]);
  for (const name of commands) {
    const body = FAKE_SCRIPTS[name];
    if (body === undefined) throw new Error(`no fake for ${name}`);
    await writeFake(bin, name, body);
  }
  const svcFile = (fmri: string) => path.join(state, 'svc', fmri.replace(/[/:]/g, '_'));
  const calls = async (): Promise<string[][]> => {
    const text = await readFile(path.join(state, 'calls.log'), 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => l.split('\t'));
  };
  return {
    dir,
    bin,
    state,
    root,
    env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`, FAKE_STATE: state },
    async setMdata(key, value) {
      const f = path.join(state, 'mdata', key);
      if (value === undefined) await rm(f, { force: true });
      else await writeFile(f, value);
    },
    async getMdata(key) {
      return readFile(path.join(state, 'mdata', key), 'utf8').catch(() => undefined);
    },
    async svcState(fmri) {
      return (await readFile(svcFile(fmri), 'utf8').catch(() => undefined))?.trim();
    },
    async setSvcState(fmri, s) {
      await writeFile(svcFile(fmri), `${s}\n`);
    },
    calls,
    async callsOf(command) {
      return (await calls()).filter((c) => c[0] === command);
    },
    async clearCalls() {
      await rm(path.join(state, 'calls.log'), { force: true });
    },
    async cleanup() {
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Adds (or replaces) one fake command in `bin`. */
export async function writeFake(bin: string, name: string, body: string): Promise<void> {
  const file = path.join(bin, name);
  await writeFile(file, `#!/bin/bash\n${RECORD}${body}\n`);
  await chmod(file, 0o755);
}
