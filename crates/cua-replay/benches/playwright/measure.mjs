// The timing both hand-written Playwright flows share, so their figures mean the same thing.
//
// `flow(page)` runs the flow once and returns the values it read; `between(page)`, when given,
// runs untimed before each browser-start-excluded iteration (a sign-out, say). Prints one JSON
// object: per-iteration milliseconds with the browser start excluded (one browser, one untimed
// warm-up run) and included (a fresh browser per iteration), and the last values read.
import { chromium } from 'playwright-core';

export async function measure(flow, iterations, between = async () => {}) {
  const executablePath = process.env.CUA_CHROMIUM || '/usr/lib/chromium/chromium';
  const excluded = [];
  const included = [];
  let values = null;
  {
    const browser = await chromium.launch({ executablePath, headless: true });
    const page = await browser.newPage();
    // One warm-up run, untimed (both sides get one).
    await flow(page);
    for (let i = 0; i < iterations; i += 1) {
      await between(page);
      const start = performance.now();
      values = await flow(page);
      excluded.push(performance.now() - start);
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
  console.log(JSON.stringify({ excluded, included, values }));
}
