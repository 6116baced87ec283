/**
 * What a runaway client or an operator's network can throw at a CN's cn-agent socket, and
 * what must still hold: every task that is counted ends, `/history` (CNAPI's task-history)
 * keeps answering, and the CN keeps serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, history, postTask, request, type TestCn } from './helpers.js';

describe('cn-agent under abuse', () => {
  let h: Harness;
  let cn: TestCn;

  beforeAll(async () => {
    h = await Harness.create();
    cn = await h.addCn();
  });
  afterAll(async () => {
    await h.close();
  });

  it('runs a task whose params nest 5,000 levels to its end: nothing left in flight, /history still answers', async () => {
    // Built as text: JSON.stringify itself cannot write what JSON.parse reads here.
    const body = `{"task":"nop","params":{"deep":${'{"d":'.repeat(5000)}1${'}'.repeat(5000)}}}`;
    const r = await request(`${cn.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
      body,
    });
    expect(r.status).toBe(200);
    expect(h.server.tasksInFlight).toBe(0);
    const entries = await history(cn);
    expect(entries.at(-1)).toMatchObject({ task: 'nop', status: 'finished' });
    // What is kept of such params is cut short, never a stack overflow for the next reader.
    expect(JSON.stringify(entries.at(-1).params).length).toBeLessThan(30_000);
    expect((await postTask(cn, 'nop', {})).status).toBe(200);
  });
});
