/**
 * The configuration manifests the global-zone agents carry with them. On a real CN each of
 * these agents ships a `sapi_manifests/<agent>/` directory (manifest.json and template) and,
 * at install, drops `/opt/smartdc/agents/etc/config-agent.d/<agent>.json` naming its instance
 * and that directory (the agents' npm/postinstall.sh `add_config_agent_instance`); the GZ
 * config-agent then serves exactly those instances (sdc-config-agent lib/agent/agent.js
 * loadInstances, `localManifestDirs`). Path, post_cmd and the metadata each template reads
 * follow sdc-cn-agent, sdc-vm-agent, sdc-net-agent and triton-cmon-agent
 * `sapi_manifests/<agent>/`; the templates are mockcloud's, rendering the same keys.
 */

export interface LocalManifest {
  name: string;
  /** Where the file lives on a CN. */
  path: string;
  /** A hogan.js (mustache) template. */
  template: string;
  post_cmd?: string;
}

/** `svcadm restart` of the agent (enable when it is not online), as the manifests say it. */
function restart(agent: string, also?: string): string {
  const own = `[[ $(svcs -Ho state ${agent}) == 'online' ]] && /usr/sbin/svcadm restart ${agent} || /usr/sbin/svcadm enable ${agent}`;
  return also ? `${own}; /usr/sbin/svcadm restart ${also}` : own;
}

/** An agent's config naming its API by the sdc application's `<API>_SERVICE`, and `no_rabbit`. */
function apiConfig(key: string, service: string): string {
  return (
    '{\n' +
    `\t"${key}": { "url": "http://{{{${service}}}}" },\n` +
    '\t"no_rabbit": {{#no_rabbit}}true{{/no_rabbit}}{{^no_rabbit}}false{{/no_rabbit}}\n' +
    '}\n'
  );
}

export const AGENT_MANIFESTS: Readonly<Record<string, readonly LocalManifest[]>> = {
  'cn-agent': [
    {
      name: 'cn-agent',
      path: '/opt/smartdc/agents/etc/cn-agent.config.json',
      template: apiConfig('cnapi', 'CNAPI_SERVICE'),
      post_cmd: restart('cn-agent', 'provisioner'),
    },
  ],
  'vm-agent': [
    {
      name: 'vm-agent',
      path: '/opt/smartdc/agents/etc/vm-agent.config.json',
      template: apiConfig('vmapi', 'VMAPI_SERVICE'),
      post_cmd: restart('vm-agent', 'heartbeater'),
    },
  ],
  'net-agent': [
    {
      name: 'net-agent',
      path: '/opt/smartdc/agents/etc/net-agent.config.json',
      template: apiConfig('napi', 'NAPI_SERVICE'),
      post_cmd: restart('net-agent'),
    },
  ],
  'cmon-agent': [
    {
      name: 'cmon-agent',
      path: '/opt/smartdc/agents/etc/cmon-agent.config.json',
      template: '{\n    "logLevel": "{{#CMON_AGENT_LOG_LEVEL}}{{{CMON_AGENT_LOG_LEVEL}}}{{/CMON_AGENT_LOG_LEVEL}}{{^CMON_AGENT_LOG_LEVEL}}debug{{/CMON_AGENT_LOG_LEVEL}}",\n    "port": 9163\n}\n',
      post_cmd: restart('cmon-agent'),
    },
  ],
};

/** The agents a GZ config-agent serves: those that register an instance with it. */
export function servesAgent(name: string): boolean {
  return Object.prototype.hasOwnProperty.call(AGENT_MANIFESTS, name);
}
