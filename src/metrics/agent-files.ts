/**
 * The metrics of config-agent (config files from SAPI) and firewaller (firewall state from
 * FWAPI), read at scrape time from their plug-ins' `stats()` like every agent count.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

type PluginStats = ReadonlyMap<string, Record<string, number>>;

const CONFIG_EVENTS: Record<string, string> = {
  checks: 'check',
  checkFailures: 'check_failed',
  requests: 'request',
  notModified: 'not_modified',
  configsChanged: 'config_changed',
  filesWritten: 'file_written',
  postCmds: 'post_cmd',
  renderErrors: 'render_error',
  writeErrors: 'write_error',
};

const FIREWALL_EVENTS: Record<string, string> = {
  syncs: 'sync',
  syncFailures: 'sync_failed',
  syncRetries: 'sync_retry',
  resolveRequests: 'resolve_request',
  vmapiRequests: 'vmapi_request',
  updates: 'update_received',
  rulesAdded: 'rule_added',
  rulesDeleted: 'rule_deleted',
  rvmsAdded: 'remote_vm_added',
  rvmsDeleted: 'remote_vm_deleted',
  badRules: 'rule_skipped',
  storesRebuilt: 'store_rebuilt',
  resyncs: 'resync',
};

function events(name: string, help: string, plugin: string, map: Record<string, string>, registers: Registry[], stats: () => PluginStats): void {
  new Counter({
    name,
    help,
    labelNames: ['event'],
    registers,
    collect() {
      this.reset();
      const s = stats().get(plugin);
      if (!s) return;
      for (const [key, event] of Object.entries(map)) this.inc({ event }, s[key] ?? 0);
    },
  });
}

function gauge(name: string, help: string, plugin: string, key: string, registers: Registry[], stats: () => PluginStats): void {
  new Gauge({
    name,
    help,
    registers,
    collect() {
      const s = stats().get(plugin);
      this.set(s?.[key] ?? 0);
    },
  });
}

export function registerAgentFileMetrics(registers: Registry[], stats: () => PluginStats): void {
  events(
    'mockcloud_config_agent_events_total',
    "config-agent across the fleet: checks of a CN's configs with SAPI (and failed ones), GET /configs requests (and 304s), configs that changed, files written, post_cmds recorded, templates that did not render, files not written.",
    'config-agent', CONFIG_EVENTS, registers, stats,
  );
  gauge('mockcloud_config_stale_servers', "Mock CNs whose config-agent has not completed a check with SAPI for longer than it ever waits (1.5 x its poll interval and a request's deadline).", 'config-agent', 'staleServers', registers, stats);
  events(
    'mockcloud_firewaller_events_total',
    'firewaller across the fleet: syncs with FWAPI (failed, retried), /resolve and VMAPI requests, updates received from FWAPI, rules and remote VMs added to or deleted from the CNs\' stores, rules skipped as unparsable, stores rebuilt, resyncs after a gap.',
    'firewaller', FIREWALL_EVENTS, registers, stats,
  );
  gauge('mockcloud_firewall_rules', "Rules held in the mock CNs' firewall stores, summed over the CNs (fwadm list on each).", 'firewaller', 'rules', registers, stats);
  gauge('mockcloud_firewall_remote_vms', "Remote VMs held in the mock CNs' firewall stores, summed over the CNs (fwadm list-rvms on each).", 'firewaller', 'rvms', registers, stats);
  gauge('mockcloud_firewaller_stream_connected', "1 while the daemon's connection to FWAPI's update stream is up.", 'firewaller', 'streamConnected', registers, stats);
}
