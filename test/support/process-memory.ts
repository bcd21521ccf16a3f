import { readFile } from 'node:fs/promises';
import { expect } from 'chai';

/** RSS of a process, in MB (/proc/<pid>/status). */
export async function rssMb(pid: number): Promise<number> {
  return Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/**
 * Downloads `url` as fast as loopback allows, checking its Content-Length and that every byte arrives, and
 * returns the growth of process `pid`'s RSS at its peak (sampled every 4 MB received), in MB.
 */
export async function downloadPeakGrowth(url: string, token: string, pid: number, size: number): Promise<number> {
  const before = await rssMb(pid);
  let peak = before;
  let received = 0;
  let lastSample = 0;
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  expect(response.headers.get('content-length')).to.equal(String(size));
  const reader = response.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    received += value.length;
    if (received - lastSample > 4 * 1024 * 1024) {
      lastSample = received;
      peak = Math.max(peak, await rssMb(pid));
    }
  }
  expect(received).to.equal(size);
  return peak - before;
}
