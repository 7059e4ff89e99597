#!/usr/bin/env bash
# Screenshots of the run viewer (`cua show`) and of the console's run page, taken in Chromium
# with Playwright from a run the demo left: the one an operator took over and handed back.
# `make evidence` runs it after `cua demo`; from the repository root:
#   scripts/screens.sh [path/to/cua]
# writes evidence/viewer.png and evidence/console-run.png.
set -euo pipefail

cua=${1:-target/debug/cua}
runs=evidence/demo/runs
install=target/playwright-ci
chromium=/usr/lib/chromium/chromium
[ -d "$runs" ] || { echo "screens: $runs is missing: run \`cua demo\` first" >&2; exit 2; }
[ -d "$install/node_modules/@playwright/test" ] || {
  echo "screens: $install has no @playwright/test: run \`make deps-node\`" >&2; exit 2; }

# The run an operator took over: its record has lease transitions.
run=$(python3 - "$runs" <<'EOF'
import json, pathlib, sys
for record in sorted(pathlib.Path(sys.argv[1]).glob("*/run_record.json")):
    if json.loads(record.read_text()).get("lease_transitions"):
        print(record.parent.name)
        break
EOF
)
[ -n "$run" ] || { echo "screens: no run in $runs was handed over" >&2; exit 1; }

work=$(mktemp -d "$PWD/$install/screens-XXXXXX")
console_pid=
cleanup() {
  [ -n "$console_pid" ] && kill "$console_pid" 2>/dev/null && wait "$console_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$cua" show "$runs/$run" --out "$work/viewer.html" > /dev/null
"$cua" --format json console --bind 127.0.0.1:0 --evidence-dir "$runs" > "$work/console.json" 2>/dev/null &
console_pid=$!
for _ in $(seq 1 100); do
  [ -s "$work/console.json" ] && break
  sleep 0.1
done
open=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["data"]["open"])' "$work/console.json")

cat > "$work/playwright.config.ts" <<EOF
import { defineConfig } from '@playwright/test';
export default defineConfig({
  testDir: '.', outputDir: './test-results', timeout: 60000, workers: 1, retries: 0,
  reporter: 'line',
  use: {
    headless: true, viewport: { width: 1400, height: 1000 },
    launchOptions: { executablePath: '$chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] },
  },
});
EOF
cat > "$work/screens.spec.ts" <<EOF
import { test, expect } from '@playwright/test';
async function pick(tab) {
  const view = tab.locator('.cua-show');
  await expect(view.getByRole('heading', { level: 1 })).toHaveText('Run $run');
  await view.getByRole('list', { name: 'Steps' }).getByRole('button').filter({ hasText: /\\b(click|fill|type_text)\\b/ }).first().click();
  await expect(view.getByRole('region', { name: 'Step detail' })).toBeVisible();
}
test('viewer', async ({ page: tab }) => {
  await tab.goto('file://$work/viewer.html');
  await pick(tab);
  await tab.screenshot({ path: '$PWD/evidence/viewer.png', fullPage: false });
});
test('console', async ({ page: tab }) => {
  await tab.goto('$open&go=/runs/$run');
  await pick(tab);
  await tab.screenshot({ path: '$PWD/evidence/console-run.png', fullPage: false });
});
EOF
(cd "$install" && npx --no-install playwright test --config "$work/playwright.config.ts")
echo "screens: evidence/viewer.png and evidence/console-run.png show run $run"
