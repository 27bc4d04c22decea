import { jest } from '@jest/globals';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { createToken, startServer, stopServer, type ServerProcess } from '../support/server-process';

jest.setTimeout(90_000);

/** Debian's chromium package; the test never downloads a browser. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Swagger UI at /docs, used as a person would: authorize with a fresh token, "Try it out" on
 * POST /plants, and read the 200 and the Plant off the page.
 */
describe('Swagger UI in a real browser', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let browser: Browser;
  let token: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`no browser at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
    database = await freshDatabase();
    token = await createToken(database.url, 'browser');
    server = await startServer({ DATABASE_URL: database.url });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    if (server) await stopServer(server);
    await database?.drop();
  });

  it('authorizes, tries POST /plants out, and shows the 200 Plant', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/docs`);
    await page.getByText('Plant Store', { exact: false }).first().waitFor();
    // The request body's model is labelled as the object it is, not "(any & object)".
    const models = page.locator('section.models');
    await models.getByText('NewPlant').first().waitFor();
    expect(await models.innerText()).not.toContain('any');

    await page.locator('.auth-wrapper .authorize').click();
    await page.locator('.modal-ux input').fill(token);
    await page.locator('.modal-ux .auth-btn-wrapper .authorize').click();
    await page.locator('.modal-ux .btn-done').click();

    const operation = page.locator('#operations-plants-createPlant');
    await operation.locator('.opblock-summary').click();
    await operation.locator('.try-out__btn').click();
    await operation
      .locator('textarea.body-param__text')
      .fill('{"id": 9007199254740993, "name": "Browser fern", "tag": "ui"}');
    await operation.locator('.execute').click();

    const live = operation.locator('.live-responses-table .response');
    await live.first().waitFor();
    await expect(live.locator('.response-col_status').first().innerText()).resolves.toBe('200');
    const shown = await live.locator('.response-col_description pre').first().innerText();
    expect(JSON.parse(shown)).toEqual({ name: 'Browser fern', tag: 'ui' });
    await page.screenshot({
      path: `${process.env.BROWSER_SCREENSHOT ?? '/tmp/plant-store-swagger-ui.png'}`,
      fullPage: true,
    });
  });
});
