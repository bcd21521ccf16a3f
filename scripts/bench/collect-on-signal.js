// Preloaded into a process by scenario 16 (`node --import`): each SIGUSR2 makes V8 collect all garbage (the
// inspector's HeapProfiler.collectGarbage, a full mark-compact) and then prints `collected N` (N counts the
// signals), so the bench can read what the process holds, not what it has not collected yet.
import inspector from 'node:inspector';

const session = new inspector.Session();
session.connect();
let collections = 0;
process.on('SIGUSR2', () => {
  const n = ++collections;
  session.post('HeapProfiler.collectGarbage', () => process.stdout.write(`collected ${n}\n`));
});
