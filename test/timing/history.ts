/** Reading a cn-agent task-history entry (GET /servers/:uuid/task-history) in the timing tests. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = Record<string, any>;

/** The draws a task's log names ("timing <profile>: <phase> takes <n> ms"), by phase. */
export function drawsOf(entry: Obj): Map<string, number> {
  const out = new Map<string, number>();
  for (const l of entry.log as Obj[]) {
    const m = /^timing \S+: (\S+) takes (\d+) ms$/.exec(String(l.message[0]));
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** When the entry's message `name` (`start:<step>`, `end:<step>`, `finish`) was recorded (ms). */
export const at = (entry: Obj, name: string): number => Date.parse((entry.messages as Obj[]).find((m) => m.name === name)!.timestamp);
