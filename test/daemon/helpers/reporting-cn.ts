/** A mock CN with no files behind it, as the CNAPI reporter's tests need one: sysinfo, agents, a fake VM store. */
import { newUuid } from '../../../src/common/uuid.js';
import { MockCnImpl } from '../../../src/mockcn/mock-cn.js';
import { pathsUnder } from '../../../src/mockcn/layout.js';
import { getProfile } from '../../../src/mockcn/profiles.js';
import { buildSysinfo, randomMockMac } from '../../../src/mockcn/sysinfo-template.js';
import type { VmStore } from '../../../src/vmadm/types.js';
import { FakeVmStore } from './fakes.js';

export function makeReportingCn(agentPort = 45678): { cn: MockCnImpl; store: FakeVmStore } {
  const uuid = newUuid();
  const store = new FakeVmStore(uuid);
  const sysinfo = buildSysinfo({
    uuid,
    profile: getProfile('virtual'),
    datacenterName: 'testdc',
    platform: '20240101T000000Z',
    adminMac: randomMockMac(),
    adminIp: '10.99.99.7',
    extraMac: randomMockMac(),
  });
  const cn = new MockCnImpl({
    uuid,
    paths: pathsUnder(`/nonexistent/${uuid}`),
    vms: store as unknown as VmStore,
    sysinfo,
    agents: [
      { name: 'cn-agent', version: '2.15.0', image_uuid: newUuid(), uuid: newUuid() },
      { name: 'vm-agent', version: '1.9.1', image_uuid: newUuid(), uuid: newUuid() },
    ],
  });
  cn.agentAddress = { ip: '127.0.0.1', port: agentPort };
  return { cn, store };
}
