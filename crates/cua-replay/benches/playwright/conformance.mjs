// The conformance flows, hand-written with Playwright the way a careful engineer would:
// getByRole where the page gives roles, the same Debian Chromium, headless.
//
//   node conformance.mjs APP BASE_URL ITERATIONS USER PASSWORD
//
// APP is `redmine` (read issue 3's subject, status and priority through its deep link) or
// `wordpress` (search the categories for "Loans" and read that row's slug among look-alikes).
// Prints one JSON object: per-iteration milliseconds with the browser start excluded (one
// browser, signed in once, untimed) and included (a fresh browser per iteration, signing in),
// and the values read, so a wrong flow cannot pass as a fast one.
import { measure } from './measure.mjs';

const [app, baseUrl, iterationsText, user, password] = process.argv.slice(2);
const iterations = Number(iterationsText ?? '5');

const flows = {
  async redmine(page) {
    await page.goto(`${baseUrl}/issues/3`);
    const login = page.getByRole('button', { name: 'Login', exact: true });
    if (await login.isVisible()) {
      await page.getByRole('textbox', { name: 'Login', exact: true }).fill(user);
      await page.getByRole('textbox', { name: /^Password/ }).fill(password);
      await login.click();
      await page.waitForURL(/\/issues\/3$/);
    }
    const value = async (label) =>
      (await page.locator(`.attribute:has(> .label:text-is("${label}:")) > .value`).innerText()).trim();
    return {
      subject: (await page.locator('.subject h3').innerText()).trim(),
      status: await value('Status'),
      priority: await value('Priority'),
    };
  },
  async wordpress(page) {
    await page.goto(`${baseUrl}/wp-admin/edit-tags.php?taxonomy=category`);
    const login = page.getByRole('button', { name: 'Log In', exact: true });
    if (await login.isVisible()) {
      await page.getByRole('textbox', { name: 'Username or Email Address' }).fill(user);
      await page.getByRole('textbox', { name: 'Password', exact: true }).fill(password);
      await login.click();
      await page.waitForURL(/\/wp-admin\/edit-tags\.php/);
    }
    await page.getByRole('searchbox', { name: 'Search Categories:' }).fill('Loans');
    await page.getByRole('button', { name: 'Search Categories', exact: true }).click();
    const row = page
      .getByRole('row')
      .filter({ has: page.getByRole('link', { name: 'Edit “Loans”', exact: true }) });
    return { slug: (await row.locator('td.column-slug').innerText()).trim() };
  },
};
const flow = flows[app];
if (!flow) throw new Error(`unknown app ${app}`);

await measure(flow, iterations);
