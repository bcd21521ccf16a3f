// Preloaded into a gateway by heap-profile.js (`node --import`): SIGUSR2 starts V8's sampling heap profiler (short-lived
// objects included), the next SIGUSR2 writes the profile to $HEAP_OUT.
import inspector from 'node:inspector';
import { writeFileSync } from 'node:fs';

const session = new inspector.Session();
session.connect();
let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    session.post('HeapProfiler.startSampling', {
      samplingInterval: 1024,
      includeObjectsCollectedByMinorGC: true,
      includeObjectsCollectedByMajorGC: true,
    });
    return;
  }
  session.post('HeapProfiler.stopSampling', (err, result) => {
    writeFileSync(process.env.HEAP_OUT, err ? '{}' : JSON.stringify(result.profile));
    sampling = false;
  });
});
