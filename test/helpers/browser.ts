import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { ROOT } from './build.js';

/** Debian's Chromium; CHROMIUM_PATH names another (the skip test points it at a missing file). */
export const CHROMIUM = process.env.CHROMIUM_PATH?.trim() || '/usr/bin/chromium';
export const SCREENSHOTS = join(ROOT, 'test-output/screenshots/');

/**
 * Why the browser tests are skipped here, or `false` when they run. Without Chromium they are
 * skipped, as the PostgreSQL runs are without a database, unless REQUIRE_BROWSER=1 (CI) demands them.
 */
export const browserSkip: string | false = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: browser tests skipped (apt-get install chromium)`;

if (browserSkip !== false && process.env.REQUIRE_BROWSER === '1') {
  throw new Error(`REQUIRE_BROWSER=1 but ${CHROMIUM} is missing: the browser tests cannot be skipped here.`);
}

/** Debian's Chromium, headless; never a browser downloaded by a package manager. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium).`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}
