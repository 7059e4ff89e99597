// The timing both hand-written Playwright flows share, so their figures mean the same thing.
//
// `flow(page)` runs the flow once and returns the values it read; `between(page)`, when given,
// runs untimed before each browser-start-excluded iteration (a sign-out, say). Prints one JSON
// object: per-iteration milliseconds with the browser start excluded (one browser, one untimed
// warm-up run) and included (a fresh browser per iteration), the CPU milliseconds of each
// excluded iteration (this process, and Chromium), and the last values read.
import { readdirSync, readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

// Nanoseconds of CPU used by this process's descendants, the browser it launched (every
// thread's `/proc/<pid>/task/*/schedstat`), as the Rust side measures its own.
function browserCpuNs(root = process.pid) {
  const parents = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const ppid = /^PPid:\s*(\d+)/m.exec(status);
      if (ppid) parents.set(Number(entry), Number(ppid[1]));
    } catch { /* gone */ }
  }
  const inFamily = (pid) => {
    for (let hops = 0; hops < 64 && pid > 1; hops += 1) {
      if (pid === root) return true;
      pid = parents.get(pid) ?? 0;
    }
    return false;
  };
  let total = 0;
  for (const pid of parents.keys()) {
    if (pid === root || !inFamily(pid)) continue;
    try {
      for (const task of readdirSync(`/proc/${pid}/task`)) {
        total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      }
    } catch { /* gone */ }
  }
  return total;
}

export async function measure(flow, iterations, between = async () => {}) {
  const executablePath = process.env.CUA_CHROMIUM || '/usr/lib/chromium/chromium';
  const excluded = [];
  const included = [];
  // CPU milliseconds per browser-start-excluded iteration: this Node process, and Chromium.
  const ownCpu = [];
  const browserCpu = [];
  let values = null;
  {
    const browser = await chromium.launch({ executablePath, headless: true });
    const page = await browser.newPage();
    // One warm-up run, untimed (both sides get one).
    await flow(page);
    for (let i = 0; i < iterations; i += 1) {
      await between(page);
      const browserBefore = browserCpuNs();
      const ownBefore = process.cpuUsage();
      const start = performance.now();
      values = await flow(page);
      excluded.push(performance.now() - start);
      const own = process.cpuUsage(ownBefore);
      ownCpu.push((own.user + own.system) / 1000);
      browserCpu.push((browserCpuNs() - browserBefore) / 1e6);
    }
    await browser.close();
  }
  for (let i = 0; i < iterations; i += 1) {
    const start = performance.now();
    const browser = await chromium.launch({ executablePath, headless: true });
    const page = await browser.newPage();
    values = await flow(page);
    await browser.close();
    included.push(performance.now() - start);
  }
  console.log(JSON.stringify({ excluded, included, ownCpu, browserCpu, values }));
}
