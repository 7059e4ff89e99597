// The savings-balance flow, hand-written with Playwright the way a careful engineer would:
// getByRole locators inside the content frame, the same Debian Chromium, headless.
//
//   node savings_balance.mjs BASE_URL ITERATIONS
//
// Prints one JSON object: per-iteration milliseconds with the browser start excluded (one
// browser, signed out before each iteration, untimed) and included (a fresh browser per
// iteration), and the values read, so a wrong flow cannot pass as a fast one.
import { measure } from './measure.mjs';

const [baseUrl, iterationsText] = process.argv.slice(2);
const iterations = Number(iterationsText ?? '5');

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

await measure(flow, iterations, (page) => page.goto(`${baseUrl}/logout`));
