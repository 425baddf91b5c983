import { constants } from 'node:fs'
import { access, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'

/**
 * Debian's Chromium (package `chromium`), driven by playwright-core: no
 * browser download, the one installed on the machine. `.ci/run` installs it
 * when it is missing.
 */

/** The `chromium` on PATH, or why the browser tests cannot run here. */
export async function findChromium(): Promise<{ path: string } | { skip: string }> {
  for (const folder of (process.env.PATH ?? '').split(delimiter)) {
    if (folder === '') continue
    const candidate = join(folder, 'chromium')
    try {
      await access(candidate, constants.X_OK)
      return { path: candidate }
    } catch {}
  }
  return {
    skip: 'no chromium on PATH: install Debian package chromium (.ci/run does) to run the browser tests',
  }
}

/**
 * A headless Chromium with a profile of its own in a temp folder (nothing of
 * a developer's browser leaks in), no background traffic, closed with its
 * profile at teardown.
 */
export async function launchChromium(
  t: { teardown(fn: () => unknown): void },
  executablePath: string,
): Promise<BrowserContext> {
  const profile = await mkdtemp(join(tmpdir(), 'shell-data-chromium-'))
  const removeProfile = () => rm(profile, { recursive: true, force: true })
  const browser = await chromium
    .launchPersistentContext(profile, {
      executablePath,
      headless: true,
      // A fixed size and scale, so the screenshot is the same on every machine that has the same fonts.
      viewport: { width: 1100, height: 620 },
      deviceScaleFactor: 1,
      locale: 'en-US',
      timezoneId: 'UTC',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    .catch(async (error: unknown) => {
      await removeProfile()
      throw error
    })
  t.teardown(async () => {
    await browser.close()
    await removeProfile()
  })
  // Tests run through tsx, whose esbuild keeps function names by wrapping them in `__name()`;
  // functions a test hands to the page (page.evaluate) carry those calls along.
  await browser.addInitScript({ content: 'globalThis.__name = (target) => target' })
  return browser
}
