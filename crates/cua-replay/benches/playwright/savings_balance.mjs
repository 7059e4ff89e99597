// The savings-balance flow, hand-written with Playwright the way a careful engineer would:
// getByRole locators inside the content frame, the same Debian Chromium, headless.
//
//   node savings_balance.mjs BASE_URL ITERATIONS
//
// Prints one JSON object: per-iteration milliseconds with the browser start excluded (one
// browser, signed out before each iteration, untimed) and included (a fresh browser per
// iteration), and the values read, so a wrong flow cannot pass as a fast one.
import { chromium } from 'playwright-core';

const [baseUrl, iterationsText] = process.argv.slice(2);
const iterations = Number(iterationsText ?? '5');
const executablePath = process.env.CUA_CHROMIUM || '/usr/lib/chromium/chromium';

async function flow(page) {
  await page.goto(`${baseUrl}/`);
  const content = page.frameLocator('frame[name="content"]');
  await content.getByRole('textbox', { name: 'Operator ID' }).fill('teller01');
  await content.getByRole('textbox', { name: 'Password' }).fill('not-a-real-password');
  await content.getByRole('button', { name: 'Sign On' }).click();
  await content.getByRole('textbox', { name: 'Member Number' }).fill('12345');
  await content.getByRole('button', { name: 'Search' }).click();
  // The value cell has no name of its own: it is the cell after its label.
  const value = async (label) =>
    (await content.getByRole('cell', { name: label, exact: true })
      .locator('xpath=following-sibling::td[1]').innerText()).trim();
  await content.getByRole('cell', { name: 'Savings Balance', exact: true }).waitFor();
  return {
    savings_balance: await value('Savings Balance'),
    account_status: await value('Status'),
    as_of: await value('As Of'),
  };
}

const excluded = [];
const included = [];
let values = null;
{
  const browser = await chromium.launch({ executablePath, headless: true });
  const page = await browser.newPage();
  // One warm-up run, untimed (both sides get one).
  await flow(page);
  for (let i = 0; i < iterations; i += 1) {
    await page.goto(`${baseUrl}/logout`);
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
