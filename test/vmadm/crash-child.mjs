/**
 * Child process of crash.test.ts: writes VMs through the compiled vmadm until it is
 * SIGKILLed. Prints one JSON line per event on stdout (Linux pipes are written
 * synchronously, so a printed line is never lost):
 *   {"ev":"ready"}                              store opened
 *   {"ev":"begin","op":...,"uuid":...,"n":...}  an operation is about to start
 *   {"ev":"ack","op":...,"uuid":...,"n":...}    it resolved (acknowledged)
 * Each VM is owned by one worker, so at most one operation per VM is in flight.
 *
 * argv: <dist vmadm index.js> <data root> <server uuid> <workers>
 */
import { randomUUID } from 'node:crypto';

const [distIndex, root, serverUuid, workersArg] = process.argv.slice(2);
const { Vmadm } = await import(distIndex);
const { createQuietLogger } = await import(new URL('../common/log.js', `file://${distIndex}`).href);

const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const vmadm = new Vmadm({ root, log: createQuietLogger() });
const store = await vmadm.openServer(serverUuid, { UUID: serverUuid, 'Datacenter Name': 'crash', 'Live Image': 'x' });
say({ ev: 'ready', vms: store.size });

const workers = Number(workersArg);
const owned = Array.from({ length: workers }, () => []);
store.list({ include_dni: true }).forEach((vm, i) => owned[i % workers].push(vm.uuid));

function payload(uuid) {
  return {
    uuid,
    brand: 'joyent-minimal',
    ram: 256,
    tags: { n: 0 },
    customer_metadata: { pad: 'x'.repeat(2000) }, // files big enough for torn writes to be possible
    nics: [{ ip: '10.0.0.1', netmask: '255.255.255.0', nic_tag: 'admin' }],
  };
}

async function op(kind, uuid, n, fn) {
  say({ ev: 'begin', op: kind, uuid, n });
  await fn();
  say({ ev: 'ack', op: kind, uuid, n });
}

async function worker(mine) {
  for (;;) {
    const r = Math.random();
    if (mine.length < 4 || r < 0.15) {
      const uuid = randomUUID();
      await op('create', uuid, 0, () => store.create(payload(uuid)));
      mine.push(uuid);
    } else if (r < 0.22) {
      const uuid = mine.splice(Math.floor(Math.random() * mine.length), 1)[0];
      await op('delete', uuid, undefined, () => store.delete(uuid));
    } else {
      const uuid = mine[Math.floor(Math.random() * mine.length)];
      const n = Number(store.get(uuid).tags.n) + 1;
      await op('update', uuid, n, () => store.update(uuid, { set_tags: { n } }));
    }
  }
}

await Promise.all(owned.map((mine) => worker(mine)));
