//! The runtime helpers a spec may need (each written only when used): what each requires, the types
//! it declares and its TypeScript source.

/// The runtime helpers a spec may need; each is written only when used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Helper {
    BaseUrl,
    Input,
    Secret,
    Squash,
    Folded,
    ExactName,
    FoldedPart,
    PageText,
    ValuesOf,
    ValueOf,
    CellUnder,
    ReadMoney,
    MoneyIn,
    KeyedRecord,
    InRegion,
    InRegionAll,
    UrlValue,
    RegexText,
    AdjacentTo,
    Click,
    ByRole,
    Named,
    Records,
    OwnText,
    TextRun,
}

impl Helper {
    pub(super) fn requires(self) -> &'static [Helper] {
        match self {
            Self::PageText | Self::CellUnder | Self::ReadMoney => &[Self::Squash],
            Self::ValuesOf => &[Self::Squash, Self::ValueOf],
            Self::MoneyIn => &[Self::ReadMoney],
            Self::KeyedRecord => &[Self::Squash, Self::ByRole],
            Self::InRegion | Self::AdjacentTo => &[Self::InRegionAll],
            Self::ExactName => &[Self::Squash, Self::RegexText],
            _ => &[],
        }
    }

    /// The Playwright types its source names.
    pub(super) fn types(self) -> &'static [&'static str] {
        match self {
            Self::PageText => &["Page"],
            Self::ValuesOf | Self::ValueOf | Self::MoneyIn => &["Locator"],
            Self::InRegion | Self::InRegionAll => &["Locator"],
            Self::AdjacentTo | Self::Click | Self::OwnText | Self::TextRun => &["Locator"],
            Self::ByRole | Self::Named | Self::Records => &["Page", "FrameLocator", "Locator"],
            Self::KeyedRecord | Self::CellUnder => &["Page", "FrameLocator", "Locator"],
            _ => &[],
        }
    }

    pub(super) fn source(self) -> &'static str {
        match self {
            Self::BaseUrl => HELPER_BASE_URL,
            Self::Input => HELPER_INPUT,
            Self::Secret => HELPER_SECRET,
            Self::Squash => HELPER_SQUASH,
            Self::Folded => HELPER_FOLDED,
            Self::ExactName => HELPER_EXACT_NAME,
            Self::FoldedPart => HELPER_FOLDED_PART,
            Self::PageText => HELPER_PAGE_TEXT,
            Self::ValuesOf => HELPER_VALUES_OF,
            Self::ValueOf => HELPER_VALUE_OF,
            Self::CellUnder => HELPER_CELL_UNDER,
            Self::ReadMoney => HELPER_READ_MONEY,
            Self::MoneyIn => HELPER_MONEY_IN,
            Self::KeyedRecord => HELPER_KEYED_RECORD,
            Self::InRegion => HELPER_IN_REGION,
            Self::InRegionAll => HELPER_IN_REGION_ALL,
            Self::UrlValue => HELPER_URL_VALUE,
            Self::RegexText => HELPER_REGEX_TEXT,
            Self::AdjacentTo => HELPER_ADJACENT_TO,
            Self::Click => HELPER_CLICK,
            Self::ByRole => HELPER_BY_ROLE,
            Self::Named => HELPER_NAMED,
            Self::Records => HELPER_RECORDS,
            Self::OwnText => HELPER_OWN_TEXT,
            Self::TextRun => HELPER_TEXT_RUN,
        }
    }
}

const HELPER_BASE_URL: &str = r#"/** The application's URL from `CUA_BASE_URL`, without a trailing slash. */
function baseUrl(): string {
  const url = process.env.CUA_BASE_URL;
  if (!url) {
    throw new Error('CUA_BASE_URL is not set: give the URL of the application under test');
  }
  return url.replace(/\/+$/, '');
}
"#;

const HELPER_INPUT: &str = r#"/** An input from `variable`, else the artifact's example; checked as replay checks it. */
function input(variable: string, example?: string, pattern?: RegExp, allowed?: string[]): string {
  const value = process.env[variable] ?? example;
  if (value === undefined) {
    throw new Error(`${variable} is not set and the artifact gives no example`);
  }
  if (pattern !== undefined && !pattern.test(value)) {
    throw new Error(`${variable}=${JSON.stringify(value)} does not match ${pattern}`);
  }
  if (allowed !== undefined && !allowed.includes(value)) {
    throw new Error(`${variable}=${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
  }
  return value;
}
"#;

const HELPER_SECRET: &str = r#"/** A secret from `variable`: secrets are never written into a spec. */
function secret(variable: string): string {
  const value = process.env[variable];
  if (!value) {
    throw new Error(`${variable} is not set: secrets come only from the environment`);
  }
  return value;
}
"#;

const HELPER_SQUASH: &str = r#"/** Whitespace squashed, as cua compares text. */
function squash(text: string): string {
  return text.replace(/\s+/gu, ' ').trim();
}
"#;

const HELPER_FOLDED: &str = r#"/** cua's `normalized` match: the same letters and digits, ignoring case, spacing and punctuation. */
function folded(text: string): RegExp {
  const gap = '[^\\p{Alphabetic}\\p{N}]*';
  const words = text.match(/[\p{Alphabetic}\p{N}]+/gu) ?? [];
  if (words.length === 0) throw new Error(`${JSON.stringify(text)} has no letters or digits to match, so it names nothing`);
  return new RegExp(`^${gap}${words.join(gap)}${gap}$`, 'iu');
}
"#;

const HELPER_EXACT_NAME: &str = r#"/** cua's `exact` match: the same name once whitespace is squashed and a trailing label colon or required marker dropped; case counts. */
function exactName(text: string): RegExp {
  const name = squash(text).replace(/[\s:*]+$/u, '');
  if (name === '') throw new Error(`${JSON.stringify(text)} is empty once squashed, so it names nothing`);
  return new RegExp(`^${regexText(name)}[\\s:*]*$`, 'u');
}
"#;

const HELPER_FOLDED_PART: &str = r#"/** cua's `name_contains`: the letters and digits of `text` in order, ignoring case and punctuation. */
function foldedPart(text: string): RegExp {
  const gap = '[^\\p{Alphabetic}\\p{N}]*';
  const words = text.match(/[\p{Alphabetic}\p{N}]+/gu) ?? [];
  if (words.length === 0) throw new Error(`${JSON.stringify(text)} has no letters or digits to match, so it names nothing`);
  return new RegExp(words.join(gap), 'iu');
}
"#;

const HELPER_PAGE_TEXT: &str = r#"/** The text of every frame, squashed and lower-cased: what cua's text_present searches. */
async function pageText(page: Page): Promise<string> {
  const texts = await Promise.all(
    page.frames().map((frame) => frame.evaluate(() => document.body?.innerText ?? '').catch(() => '')),
  );
  return squash(texts.join(' ')).toLowerCase();
}
"#;

const HELPER_VALUES_OF: &str = r#"/** The values of `controls`, squashed: what cua's node_has_value compares. */
async function valuesOf(controls: Locator[]): Promise<string[]> {
  return Promise.all(controls.map(async (control) => squash(await valueOf(control))));
}
"#;

const HELPER_VALUE_OF: &str = r#"/** A control's value as cua reads it: a select's chosen option by its text, a field's text. */
async function valueOf(control: Locator): Promise<string> {
  return control.evaluate((element) => {
    if (element instanceof HTMLSelectElement) return element.selectedOptions[0]?.text ?? '';
    return element instanceof HTMLInputElement || element instanceof HTMLTextAreaElement ? element.value : '';
  });
}
"#;

const HELPER_READ_MONEY: &str = r#"/** cua's money reading: `$4,210.55` is 4210.55 whatever the sign and grouping; null when the text is not an amount. */
function readMoney(text: string): string | null {
  const match = /^(\()?(-)?\$?(-)?((?:[0-9]{1,3}(?:,[0-9]{3})+)|[0-9]+)(?:\.([0-9]+))?(\))?$/u.exec(squash(text));
  if (!match) return null;
  const [, open, minus, innerMinus, whole, fraction, close] = match;
  if (Boolean(open) !== Boolean(close) || (open && (minus || innerMinus)) || (minus && innerMinus)) return null;
  const digits = whole.replace(/,/gu, '').replace(/^0+/u, '') || '0';
  const cents = (fraction ?? '').replace(/0+$/u, '');
  const sign = (open || minus || innerMinus) && (digits !== '0' || cents !== '') ? '-' : '';
  return cents ? `${sign}${digits}.${cents}` : `${sign}${digits}`;
}
"#;

const HELPER_MONEY_IN: &str = r#"/** Whether a node `locator` matches reads, as a whole, as `amount`: what cua's money_present checks. */
async function moneyIn(locator: Locator, amount: string): Promise<boolean> {
  const wanted = readMoney(amount);
  const looksLikeMoney = (text: string) => /\$/u.test(text) || /\.[0-9]{2}\)?$/u.test(squash(text));
  return wanted !== null && (await locator.allInnerTexts()).some((text) => looksLikeMoney(text) && readMoney(text) === wanted);
}
"#;

const HELPER_URL_VALUE: &str = r#"/** A value as cua binds it into a URL: every character but RFC 3986's unreserved ones percent-encoded, and never a `.` or `..` segment. */
function urlValue(value: string): string {
  if (value === '.' || value === '..') {
    throw new Error(`the value ${JSON.stringify(value)} would be a path segment the browser resolves away`);
  }
  return encodeURIComponent(value).replace(/[!'()*]/gu, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
"#;

const HELPER_IN_REGION: &str = r#"/** The one element of `candidates` in `region`; a same-named control in another region is not a candidate. */
async function inRegion(candidates: Locator, region: string): Promise<Locator> {
  const inside = await inRegionAll(candidates, region);
  expect(inside.length, `exactly one candidate in region ${region}`).toBe(1);
  return inside[0];
}
"#;

const HELPER_IN_REGION_ALL: &str = r#"/**
 * The elements of `candidates` in `region`, as cua's snapshot infers regions: the innermost
 * landmark around an element (`main`, `nav`, the page's `header` and `footer`, `aside`, `search`,
 * a labelled `section` or `role="region"`) opens a region named by its label or else its role,
 * and the last shown heading before the element inside that same landmark names it instead.
 */
async function inRegionAll(candidates: Locator, region: string): Promise<Locator[]> {
  const inside: Locator[] = [];
  for (const candidate of await candidates.all()) {
    const found = await candidate.evaluate((element) => {
      const slug = (text: string): string => {
        let out = '';
        for (const c of text.toLowerCase()) {
          if (/[\p{L}\p{N}]/u.test(c)) out += c;
          else if (out && !out.endsWith('_')) out += '_';
        }
        return out.replace(/_+$/u, '');
      };
      const squashed = (text: string | null): string => (text ?? '').replace(/\s+/gu, ' ').trim();
      const label = (node: Element): string => {
        const ids = node.getAttribute('aria-labelledby');
        if (ids) {
          const texts = ids.split(/\s+/u).map((id) => node.ownerDocument.getElementById(id)?.textContent ?? '');
          return squashed(texts.join(' '));
        }
        return squashed(node.getAttribute('aria-label') ?? node.getAttribute('title'));
      };
      const landmarks = ['main', 'navigation', 'banner', 'contentinfo', 'complementary', 'region', 'search'];
      const sectioning = 'article, aside, main, nav, section';
      const landmark = (node: Element): string | null => {
        let role = (node.getAttribute('role') ?? '').trim().split(/\s+/u)[0];
        if (!role) {
          const scoped = node.parentElement?.closest(sectioning) != null;
          role = ({
            main: 'main',
            nav: 'navigation',
            search: 'search',
            aside: scoped && !label(node) ? '' : 'complementary',
            header: scoped ? '' : 'banner',
            footer: scoped ? '' : 'contentinfo',
            section: 'region',
          } as Record<string, string>)[node.localName] ?? '';
        }
        if (!landmarks.includes(role)) return null;
        const name = label(node);
        if (name) return slug(name);
        return role === 'region' ? null : role;
      };
      const scopeOf = (node: Element): Element | null => {
        for (let at = node.parentElement; at; at = at.parentElement) {
          if (landmark(at) !== null) return at;
        }
        return null;
      };
      const own = landmark(element);
      if (own !== null) return own;
      const scope = scopeOf(element);
      let last: string | null = null;
      const root = scope ?? element.ownerDocument.documentElement;
      for (const heading of root.querySelectorAll('h1, h2, h3, h4, h5, h6, [role="heading"]')) {
        const before = heading === element || (heading.compareDocumentPosition(element) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0;
        if (!before) break;
        const shown = heading.checkVisibility({ visibilityProperty: true }) && heading.closest('[aria-hidden="true"]') === null;
        if (!shown || scopeOf(heading) !== scope) continue;
        const name = label(heading) || squashed(heading.textContent);
        if (name) last = slug(name);
      }
      return last ?? (scope === null ? null : landmark(scope));
    });
    if (found === region) inside.push(candidate);
  }
  return inside;
}
"#;

const HELPER_REGEX_TEXT: &str = r#"/** A run's value inside a regex, matched as literal text: cua binds values into patterns escaped. */
function regexText(value: string): string {
  return value.replace(/[\\^$.*+?()[\]{}|/]/gu, '\\$&');
}
"#;

const HELPER_BY_ROLE: &str = r#"/** cua's roles that stand for several ARIA roles: a textbox is also a searchbox, a cell also a header cell, a table also a grid, a combobox also a listbox. */
function byRole(
  scope: Page | FrameLocator | Locator,
  role: 'cell' | 'table' | 'textbox' | 'combobox',
  options?: Parameters<Page['getByRole']>[1],
): Locator {
  const roles: Record<string, Parameters<Page['getByRole']>[0][]> = {
    cell: ['cell', 'gridcell', 'columnheader', 'rowheader'],
    table: ['table', 'grid'],
    textbox: ['textbox', 'searchbox'],
    combobox: ['combobox', 'listbox'],
  };
  return roles[role].map((one) => scope.getByRole(one, options)).reduce((all, one) => all.or(one));
}
"#;

const HELPER_NAMED: &str = r#"/** The nodes `name` names whatever their role, as cua's queries without a role find them: by their text, label, title or alternative text. */
function named(scope: Page | FrameLocator | Locator, name: string | RegExp): Locator {
  return scope.getByText(name).or(scope.getByLabel(name)).or(scope.getByTitle(name)).or(scope.getByAltText(name));
}
"#;

const HELPER_CLICK: &str = r#"/**
 * cua's click: a control kept off screen until it is focused (a row action shown on hover) is
 * focused first, as a keyboard user reaches it; then clicked where it shows.
 */
async function click(target: Locator): Promise<void> {
  // Scrolled and measured in one call: a form the page re-renders may replace the element
  // between two calls, and `click()` below finds it again.
  const shown = await target.evaluate((element) => {
    element.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    const box = element.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && box.right > 0 && box.bottom > 0 && box.left < innerWidth && box.top < innerHeight;
  });
  if (!shown) await target.focus();
  await target.click();
}
"#;

const HELPER_ADJACENT_TO: &str = r#"/**
 * cua's `adjacent_to`: the one shown candidate inside the first sibling after an anchor that is,
 * or holds, a candidate (in `region`, when the target has one). An anchor is an element
 * `anchors` finds or a bare run of text `name` matches; a run of text alone in a cell stands
 * for its cell. The accessibility tree leaves wrappers out (a `div`, a `span`), so after the
 * last sibling inside a wrapper the search goes on after the wrapper, and never further.
 */
async function adjacentTo(
  anchors: Locator,
  name: string | RegExp,
  candidates: Locator,
  region: string | null,
  what: string,
): Promise<Locator> {
  const shown = candidates.filter({ visible: true });
  await expect(shown.first(), `a candidate for ${what}`).toBeVisible();
  const all = region === null ? await shown.all() : await inRegionAll(shown, region);
  expect(all.length, `a candidate for ${what} in region ${region}`).toBeGreaterThan(0);
  const handles = await Promise.all(all.map((candidate) => candidate.elementHandle()));
  const named = await anchors.filter({ visible: true }).elementHandles();
  const hits = await all[0].evaluate((_, { named, name, handles }) => {
    const squash = (text: string): string => text.replace(/\s+/gu, ' ').trim();
    const matches = (text: string): boolean =>
      typeof name === 'string' ? squash(text).toLowerCase().includes(squash(name).toLowerCase()) : name.test(squash(text));
    const wrapper = (node: Node): boolean => {
      if (!(node instanceof Element)) return false;
      const role = node.getAttribute('role');
      if (role !== null) return ['generic', 'none', 'presentation'].includes(role.trim());
      const unnamed = !node.hasAttribute('aria-label') && !node.hasAttribute('aria-labelledby');
      return ['div', 'span', 'b', 'i', 'u', 's', 'small', 'font', 'center'].includes(node.localName)
        || (unnamed && ['section', 'form'].includes(node.localName));
    };
    const starts: Node[] = [...named];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      if (node.parentElement?.checkVisibility({ visibilityProperty: true }) && matches(node.textContent ?? '')) starts.push(node);
    }
    // A label's value may be empty, its element dropped from the accessibility tree: then
    // another label ends the search, as in replay.
    const label = (node: Node): boolean => /:$/u.test(squash(node.textContent ?? '').replace(/[\s*]+$/u, ''));
    const found = new Set<number>();
    for (const start of starts) {
      const labelled = label(start);
      let at: Node | null = start;
      search: while (at !== null) {
        for (let sibling = at.nextSibling; sibling !== null; sibling = sibling.nextSibling) {
          if (labelled && label(sibling)) break search;
          const inside = handles.flatMap((node, index) =>
            node !== null && sibling.contains(node) && !node.contains(start) ? [index] : [],
          );
          if (inside.length > 0) {
            for (const index of inside) found.add(index);
            break search;
          }
        }
        const parent: Node | null = at.parentNode;
        const cell = at === start && parent instanceof Element && ['td', 'th'].includes(parent.localName);
        at = parent !== null && (wrapper(parent) || cell) ? parent : null;
      }
    }
    return [...found];
  }, { named, name, handles });
  expect(hits.length, `exactly one ${what}`).toBe(1);
  return all[hits[0]];
}
"#;

const HELPER_KEYED_RECORD: &str = r#"/**
 * The one record of `records` whose key `holds` the key: cua's identity check, which keys a target
 * by its record and refuses a key two records hold. A row's key is the cell under `column` (or
 * its first cell); a definition's, its term; a list item's or an article's, its own first
 * heading or run of text.
 */
async function keyedRecord(
  page: Page,
  scope: Page | FrameLocator,
  records: Locator,
  column: string | null,
  holds: (text: string) => boolean,
  what: string,
): Promise<Locator> {
  const keyed: Locator[] = [];
  for (const record of await records.all()) {
    const row = await record.evaluate((element) => element.localName === 'tr' || element.getAttribute('role') === 'row');
    let key: string | null = null;
    if (row) {
      const cell = column === null ? byRole(record, 'cell').first() : await cellUnder(page, scope, record, column);
      key = await cell.innerText();
    } else if (column === null) {
      key = await record.evaluate((element) => {
        const is = (node: Element, tag: string, role: string) => node.localName === tag || node.getAttribute('role') === role;
        if (is(element, 'dd', 'definition')) {
          let term = element.previousElementSibling;
          while (term !== null && !is(term, 'dt', 'term')) term = term.previousElementSibling;
          return term === null ? null : (term as HTMLElement).innerText;
        }
        // Its own first heading or run of text, whichever comes first: never one inside a nested
        // record, a hidden element or an aria-hidden one.
        const nested = 'tr, li, article, dd, [role="row"], [role="listitem"], [role="article"], [role="definition"]';
        const walker = element.ownerDocument.createTreeWalker(element, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
          acceptNode: (node) =>
            node instanceof Element &&
            node !== element &&
            (node.matches(nested) || !node.checkVisibility({ visibilityProperty: true }) || node.getAttribute('aria-hidden') === 'true')
              ? NodeFilter.FILTER_REJECT
              : NodeFilter.FILTER_ACCEPT,
        });
        for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
          if (node instanceof Element && node.matches('h1, h2, h3, h4, h5, h6, [role="heading"]')) return (node as HTMLElement).innerText;
          if (node.nodeType === Node.TEXT_NODE && (node.textContent ?? '').trim() !== '') return node.textContent;
        }
        return null;
      });
    }
    if (key !== null && holds(squash(key))) keyed.push(record);
  }
  expect(keyed.length, `identity: exactly one record holds the key in ${what}`).toBe(1);
  return keyed[0];
}
"#;

const HELPER_OWN_TEXT: &str = r#"/** A run of text as cua reads it: the element's own text, without its children's. */
async function ownText(element: Locator): Promise<string> {
  return element.evaluate((node) =>
    [...node.childNodes].filter((child) => child.nodeType === Node.TEXT_NODE).map((child) => child.textContent ?? '').join(' '),
  );
}
"#;

const HELPER_TEXT_RUN: &str = r#"/**
 * The `n`-th run of text of `record` as cua's snapshot counts them: shown, not in a `<select>`,
 * a script or an aria-hidden element, and not blank once squashed. Its text, and the element
 * holding it.
 */
async function textRun(record: Locator, n: number): Promise<{ text: string; holder: Locator }> {
  const found = await record.evaluate((element, n) => {
    const walker = element.ownerDocument.createTreeWalker(element, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (node) =>
        node instanceof Element &&
        (node.matches('select, script, style, template') ||
          !node.checkVisibility({ visibilityProperty: true }) ||
          node.getAttribute('aria-hidden') === 'true')
          ? NodeFilter.FILTER_REJECT
          : NodeFilter.FILTER_ACCEPT,
    });
    let seen = 0;
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      if (node.nodeType !== Node.TEXT_NODE) continue;
      const text = (node.textContent ?? '').replace(/\s+/gu, ' ').trim();
      if (text === '') continue;
      if (seen === n) {
        const holder = node.parentElement;
        const path: number[] = [];
        for (let at = holder; at !== null && at !== element; at = at.parentElement) {
          path.unshift([...(at.parentElement?.children ?? [])].indexOf(at) + 1);
        }
        return { text, path };
      }
      seen += 1;
    }
    return null;
  }, n);
  expect(found, `run of text #${n} of its record`).not.toBeNull();
  const steps = found!.path.map((position) => `*[${position}]`).join('/');
  return { text: found!.text, holder: steps === '' ? record : record.locator(`xpath=./${steps}`) };
}
"#;

const HELPER_RECORDS: &str = r#"/** cua's records, the entries an identity check keys: table rows, list items, articles, definitions. */
function records(scope: Page | FrameLocator | Locator): Locator {
  return scope.getByRole('row').or(scope.getByRole('listitem')).or(scope.getByRole('article')).or(scope.getByRole('definition'));
}
"#;

const HELPER_CELL_UNDER: &str = r#"/**
 * The cell of `row` under the column headed `column`: the key cell of cua's identity check. The
 * header row is the one row of `scope` with that column header.
 */
async function cellUnder(page: Page, scope: Page | FrameLocator, row: Locator, column: string): Promise<Locator> {
  const header = scope
    .getByRole('row')
    .filter({ has: page.getByRole('columnheader', { name: column, exact: true }) })
    .filter({ hasNot: page.getByRole('row') });
  await expect(header, `one header row with a "${column}" column`).toHaveCount(1);
  const headers = (await header.getByRole('columnheader').allInnerTexts()).map(squash);
  const index = headers.indexOf(squash(column));
  expect(index, `column "${column}" among ${JSON.stringify(headers)}`).toBeGreaterThanOrEqual(0);
  return row.getByRole('cell').nth(index);
}
"#;
