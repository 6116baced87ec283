/**
 * cn-agent's tasks/ holds the tasks and nothing else, as sdc-cn-agent's
 * lib/backends/smartos/tasks/ does: one file per task, named after the task and defining it,
 * and index.ts, the registry, in the real backend's order. What the tasks share lives beside
 * tasks/ in folders named by capability (docker/, zfs/, migration/, ...), so a task file
 * imports no other file of tasks/.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TASKS } from '../../src/agents/cn-agent/tasks/index.js';
import { importsOf, src } from './source-imports.js';

const dir = path.join(src, 'agents/cn-agent/tasks');

/** The real backend's queues and their tasks, in order (sdc-cn-agent lib/backends/smartos/index.js, queueDefns). */
const REAL_QUEUES: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['machine_creation', ['machine_create', 'machine_reprovision']],
  ['image_import_tasks', ['image_ensure_present']],
  ['server_tasks', ['command_execute', 'recovery_config', 'server_overprovision_ratio', 'server_reboot', 'server_sysinfo']],
  ['docker_tasks', ['docker_exec', 'docker_copy', 'docker_stats']],
  ['docker_build_task', ['docker_build']],
  ['server_nic_tasks', ['server_update_nics']],
  ['agents_tasks', ['agent_install', 'agents_uninstall', 'shutdown_cn_agent_update', 'refresh_agents']],
  [
    'machine_tasks',
    [
      'machine_boot', 'machine_destroy', 'machine_kill', 'machine_proc', 'machine_reboot', 'machine_shutdown',
      'machine_update', 'machine_update_nics', 'machine_screenshot', 'machine_create_snapshot',
      'machine_rollback_snapshot', 'machine_delete_snapshot', 'machine_migrate', 'machine_migrate_receive',
    ],
  ],
  ['machine_images', ['machine_create_image']],
  ['image_query', ['image_get']],
  ['machine_query', ['machine_load', 'machine_info']],
  [
    'zfs_tasks',
    ['zfs_create_dataset', 'zfs_destroy_dataset', 'zfs_rename_dataset', 'zfs_snapshot_dataset', 'zfs_rollback_dataset', 'zfs_clone_dataset', 'zfs_set_properties'],
  ],
  ['zfs_query', ['zfs_get_properties', 'zfs_list_datasets', 'zfs_list_snapshots', 'zfs_list_pools']],
  ['test_sleep', ['sleep']],
  ['nop', ['nop']],
  ['test_subtask', ['test_subtask']],
];

describe("cn-agent's tasks folder", () => {
  it("registers the real backend's tasks, in its order and under its queues", () => {
    const real = REAL_QUEUES.flatMap(([queue, tasks]) => tasks.map((name) => `${queue}/${name}`));
    expect(TASKS.map((t) => `${t.queue}/${t.name}`)).toEqual(real);
  });

  it('holds one file per task, named after it and defining it, and the registry (index.ts), nothing else', () => {
    const entries = readdirSync(dir).sort();
    expect(entries.filter((e) => statSync(path.join(dir, e)).isDirectory()), 'folders in tasks/').toEqual([]);
    expect(entries).toEqual(['index.ts', ...TASKS.map((t) => `${t.name}.ts`)].sort());
    for (const { name } of TASKS) {
      const text = readFileSync(path.join(dir, `${name}.ts`), 'utf8');
      expect(text.match(/\bdefineTask\s*[<(]/g), `${name}.ts defines one task`).toHaveLength(1);
      expect(text, `${name}.ts defines ${name}`).toContain(`name: '${name}'`);
    }
  });

  it('a task file imports no other file of tasks/: what tasks share lives beside it', () => {
    const crossings = TASKS.flatMap(({ name }) =>
      importsOf(path.join(dir, `${name}.ts`))
        .filter((target) => target.startsWith('agents/cn-agent/tasks/'))
        .map((target) => `tasks/${name}.ts imports ${target}`),
    );
    expect(crossings).toEqual([]);
  });
});
