/**
 * The recording sink as its own process (forked by the benchmark with an IPC channel): starts
 * the CNAPI, VMAPI and NAPI listeners on loopback, tells the parent their URLs, and exits when
 * told to, on SIGTERM, or when the parent goes away (the IPC channel closes).
 */
import { AgentsSink, type AgentsSinkUrls } from './agents-sink.js';
import { RecordingSink } from './sink.js';

export interface SinkReadyMessage {
  type: 'ready';
  urls: { cnapi: string; vmapi: string; napi: string };
  /** SAPI and FWAPI for config-agent and firewaller (the agents step). */
  agents: AgentsSinkUrls;
  networks: { admin: string; external: string; externalSubnet: string; externalGateway: string };
}

async function main(): Promise<void> {
  const bindIp = process.env.SINK_BIND_IP || '127.0.0.1';
  const sink = new RecordingSink(bindIp);
  const urls = await sink.start();
  const agents = new AgentsSink(bindIp);
  const agentUrls = await agents.start();
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    void Promise.all([sink.stop(), agents.stop()]).finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
  process.on('message', (m: unknown) => {
    if ((m as { type?: string } | undefined)?.type === 'stop') stop();
  });
  const ready: SinkReadyMessage = {
    type: 'ready',
    urls,
    agents: agentUrls,
    networks: {
      admin: sink.napi.admin.uuid,
      external: sink.napi.external.uuid,
      externalSubnet: sink.napi.external.subnet,
      externalGateway: sink.napi.external.gateway ?? '',
    },
  };
  if (process.send) process.send(ready);
  else process.stdout.write(`${JSON.stringify(ready)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench sink: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
