import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { before, describe, it, type TestContext } from 'node:test';
import { findStaleSource, staleBuildProblem } from '../src/build-freshness.js';
import { ensureBuild, ROOT } from './helpers/build.js';
import { databaseUrl, requestArrived, runCommand, spawnChild, type Child, type ChildExit, type LogLine } from './helpers/child-server.js';
import { runCli } from './helpers/cli.js';
import { describeEachStore } from './helpers/each-store.js';
import { send } from './helpers/http.js';
import { uniqueBarcode } from './helpers/products.js';
import { sqlite, type TestStore } from './helpers/stores.js';

const SERVER = join(ROOT, 'dist/server.js');

interface Started {
  readonly url: string;
  /** The child's log lines so far and to come (the service's, under `npm start` as without it). */
  readonly waitForLog: Child['waitForLog'];
  /** The service's own process (under `npm start`, npm's child). */
  readonly servicePid: number;
  readonly child: ChildProcess;
  /** The messages logged so far. */
  readonly messages: string[];
  /** The log lines so far, with the pid of the process that wrote each. */
  readonly lines: readonly LogLine[];
  readonly exited: Promise<ChildExit>;
}

/** Runs `command` from the repository as an operator would, in a process group of its own. */
function run(command: string, args: readonly string[], env: Record<string, string>, cwd = ROOT): Child {
  return spawnChild({ HOST: '127.0.0.1', PORT: '0', ...env }, args, { command, cwd, detached: true });
}

/** Resolves once the service logs that it listens; fails if the process ends first. */
async function started(t: TestContext, child: Child): Promise<Started> {
  // The whole group, whether or not npm has ended: a service left behind must not outlive the test.
  t.after(() => {
    try {
      process.kill(-child.process.pid!, 'SIGKILL');
    } catch {
      // Nothing left in the group.
    }
  });
  const listening = await child.waitForLog(/^Server listening at http:\/\/127\.0\.0\.1:\d+$/);
  return {
    url: listening.msg!.replace(/^Server listening at /, ''),
    servicePid: listening.pid!,
    waitForLog: child.waitForLog,
    child: child.process,
    get messages() {
      return child.logs.map((entry) => entry.msg ?? '');
    },
    lines: child.logs,
    exited: child.exited,
  };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function freshDatabase(t: TestContext, testStore: TestStore = sqlite): Promise<string> {
  const { location, drop } = await testStore.create();
  t.after(drop);
  return databaseUrl(location);
}

async function busyPort(t: TestContext): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  return (server.address() as AddressInfo).port;
}

async function exitOf(child: Child): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { code } = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

describe('npm start', { timeout: 360_000 }, () => {
  before(() => ensureBuild());

  it('runs the build without compiling, and SIGTERM to npm stops the service gracefully: both exit 0', async (t) => {
    const built = statSync(SERVER).mtimeMs;
    const service = await started(t, run('npm', ['start'], { DATABASE_URL: await freshDatabase(t) }));
    assert.equal((await send(`${service.url}/healthz`)).status, 200);
    // The bundle still finds what it reads from disk: the page, its script, the API reference's assets.
    for (const path of ['/', '/assets/catalogue.js', '/assets/style.css', '/docs', '/docs/static/swagger-ui-bundle.js']) {
      assert.equal((await send(`${service.url}${path}`)).status, 200, path);
    }
    assert.ok(isRunning(service.servicePid));

    process.kill(service.child.pid!, 'SIGTERM');
    assert.deepEqual(await service.exited, { code: 0, signal: null });
    assert.ok(service.messages.includes('SIGTERM received; finishing requests in flight'), service.messages.join('\n'));
    assert.equal(isRunning(service.servicePid), false, 'the service outlived npm');
    await assert.rejects(send(`${service.url}/healthz`), /ECONNREFUSED/);
    assert.equal(statSync(SERVER).mtimeMs, built, 'npm start rebuilt dist/');
  });

  // Ctrl-C in a terminal, and systemd's default stop, signal npm and the service at once; npm then
  // passes its own signal on, so the service hears it twice.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`stops gracefully when ${signal} reaches npm and the service at once`, async (t) => {
      const service = await started(t, run('npm', ['start'], { DATABASE_URL: await freshDatabase(t), LOG_LEVEL: 'debug' }));
      // A create whose body is still arriving keeps the service stopping while the second signal comes.
      const body = JSON.stringify({ name: 'Last one in', barcode: uniqueBarcode(), price: '1.00' });
      const req = request(`${service.url}/api/v1/shop/product/`, {
        method: 'POST',
        agent: false,
        headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
      });
      const answer = new Promise<number>((resolve, reject) => {
        req.on('response', (res) => resolve(res.statusCode ?? 0));
        req.on('error', reject);
      });
      req.write(body.slice(0, 10));
      await service.waitForLog(requestArrived('POST'));
      process.kill(-service.child.pid!, signal);
      await service.waitForLog(new RegExp(`^${signal} received`));
      // npm passes its copy on whenever it gets to it: a second one is sent here too, so that the
      // service hears the signal again while it is stopping, before the rest of the body.
      process.kill(service.servicePid, signal);
      req.end(body.slice(10));
      assert.equal(await answer, 201);
      assert.deepEqual(await service.exited, { code: 0, signal: null });
      // One stop per process (the primary's and each worker's), however many signals each heard.
      const stops = service.lines.filter((line) => /received/.test(line.msg ?? '')).map((line) => line.pid);
      assert.ok(stops.length > 0 && new Set(stops).size === stops.length, service.messages.join('\n'));
      assert.equal(isRunning(service.servicePid), false);
    });
  }

  it('serves every page, asset and document from a deployment that ships only dist/ and package.json', async (t) => {
    const deployment = mkdtempSync(join(tmpdir(), 'catalogue-deployment-'));
    t.after(() => rmSync(deployment, { recursive: true, force: true }));
    cpSync(join(ROOT, 'dist'), join(deployment, 'dist'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(deployment, 'package.json'));
    // What `npm ci --omit=dev` would install there: the packages left out of the bundle.
    symlinkSync(join(ROOT, 'node_modules'), join(deployment, 'node_modules'));
    const service = await started(t, run(process.execPath, ['dist/server.js'], { DATABASE_URL: await freshDatabase(t) }, deployment));
    for (const path of ['/', '/assets/catalogue.js', '/assets/style.css', '/docs', '/docs/static/swagger-ui-bundle.js', '/openapi.json', '/docs/API.md']) {
      assert.equal((await send(`${service.url}${path}`)).status, 200, path);
    }
    process.kill(service.child.pid!, 'SIGTERM');
    assert.deepEqual(await service.exited, { code: 0, signal: null });
  });

  it("keeps the app out of the workers' primary: its bundle loads the serving only where it serves", () => {
    // The primary holds 55 MB of RSS so, 89 MB with the app loaded (docs/PERFORMANCE.md).
    const primary = readFileSync(join(ROOT, 'dist/service.js'), 'utf8');
    assert.doesNotMatch(primary, /from ["']fastify["']|import\(["']fastify["']\)/, 'the primary bundle imports Fastify');
    assert.doesNotMatch(primary, /function buildApp\b/, "the primary bundle holds the app's code");
    assert.match(primary, /import\(["']\.\/serving\.js["']\)/);
    assert.match(readFileSync(join(ROOT, 'dist/serving.js'), 'utf8'), /from ["']fastify["']/);
  });

  it('says in one line to run npm ci first on a checkout never built, and exits 1', async (t) => {
    const checkout = mkdtempSync(join(tmpdir(), 'catalogue-unbuilt-'));
    t.after(() => rmSync(checkout, { recursive: true, force: true }));
    cpSync(join(ROOT, 'package.json'), join(checkout, 'package.json'));
    const refused = await exitOf(run('npm', ['start', '--silent'], { DATABASE_URL: await freshDatabase(t) }, checkout));
    assert.equal(refused.code, 1);
    assert.equal(refused.stdout, '');
    assert.ok(refused.stderr.endsWith('There is no build in dist/: run `npm ci` first (it installs and builds).\n'), refused.stderr);
    assert.doesNotMatch(refused.stderr, /^\s+at |Cannot find module/m);
  });

  it('says in one line that the port is in use, and exits 1', async (t) => {
    const port = await busyPort(t);
    const line = `Cannot listen on 127.0.0.1:${port}: the port is in use by another process (set PORT to another port).\n`;
    const direct = await exitOf(run(process.execPath, [SERVER], { DATABASE_URL: await freshDatabase(t), PORT: String(port) }));
    assert.deepEqual(direct, { code: 1, stdout: '', stderr: line });

    const viaNpm = await exitOf(run('npm', ['start', '--silent'], { DATABASE_URL: await freshDatabase(t), PORT: String(port) }));
    assert.equal(viaNpm.code, 1);
    assert.ok(viaNpm.stderr.endsWith(line), viaNpm.stderr);
    assert.doesNotMatch(viaNpm.stderr, /^\s+at /m);
  });
});

describeEachStore('MIGRATE_ON_START=false', { env: false, timeout: 360_000 }, (ctx) => {
  before(() => ensureBuild());

  it('refuses a schema that is not current with one line, and serves once `catalogue migrate` has run', async (t) => {
    const env = { DATABASE_URL: await freshDatabase(t, ctx.testStore), MIGRATE_ON_START: 'false' };
    const refused = await exitOf(run(process.execPath, [SERVER], env));
    assert.deepEqual(refused, {
      code: 1,
      stdout: '',
      stderr: 'The database schema is not current: 0001_create_product, 0002_catalogue_state, 0003_idempotency, 0004_change_notice, 0005_product_search, 0006_price_limit, 0007_change_feed, 0008_bulk_write_journal, 0009_search_index_on_change, 0010_search_across_words, 0011_catalogue_identity, 0012_pk_bound, 0013_search_across_separators, 0014_change_notice_kind, 0015_pk_range, 0016_search_column, 0017_pk_moves have not run. Run `npx catalogue migrate` first (MIGRATE_ON_START is false).\n',
    });
    // Neither does the import migrate it behind the operator's back.
    const exported = await runCli('export', [], env);
    assert.equal(exported.code, 1);
    assert.match(exported.stderr, /^The database schema is not current: .* Run `catalogue migrate` first \(MIGRATE_ON_START is false\)\.\n$/);

    assert.deepEqual(await runCli('migrate', [], env), { code: 0, stdout: '', stderr: 'Applied: 0001_create_product, 0002_catalogue_state, 0003_idempotency, 0004_change_notice, 0005_product_search, 0006_price_limit, 0007_change_feed, 0008_bulk_write_journal, 0009_search_index_on_change, 0010_search_across_words, 0011_catalogue_identity, 0012_pk_bound, 0013_search_across_separators, 0014_change_notice_kind, 0015_pk_range, 0016_search_column, 0017_pk_moves.\n' });
    const service = await started(t, run(process.execPath, [SERVER], env));
    assert.deepEqual((await send(`${service.url}/api/v2/shop/products`)).json, { count: 0, next: null, previous: null, results: [] });
    process.kill(service.child.pid!, 'SIGTERM');
    assert.deepEqual(await service.exited, { code: 0, signal: null });
  });
});

describe('a stale build', () => {
  /** A checkout with one source in a sub-folder, built at `builtAt` (seconds since the epoch). */
  function checkout(t: TestContext, builtAt: number): string {
    const root = mkdtempSync(join(tmpdir(), 'catalogue-build-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    for (const [path, at] of [['src/server.ts', 100], ['src/web/page.ts', 100], ['src/types.d.ts', 300], ['dist/server.js', builtAt], ['dist/web/page.js', builtAt]] as const) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), '');
      utimesSync(join(root, path), at, at);
    }
    return root;
  }

  it('is told apart from a current one by each source and its output', (t) => {
    const root = checkout(t, 200);
    assert.equal(findStaleSource(root), undefined);
    assert.equal(staleBuildProblem(pathToFileURL(join(root, 'dist/server.js')).href), undefined);

    utimesSync(join(root, 'src/web/page.ts'), 250, 250);
    assert.equal(findStaleSource(root), join('src', 'web', 'page.ts'));
    assert.equal(
      staleBuildProblem(pathToFileURL(join(root, 'dist/server.js')).href),
      'The build in dist/ is older than src/web/page.ts: run `npm run build` first (npm ci and npm install build too).',
    );
    // Running from the sources (tsx) never needs a build.
    assert.equal(staleBuildProblem(pathToFileURL(join(root, 'src/server.ts')).href), undefined);
  });

  it('includes a source whose output is missing, and is no concern where only the build is shipped', (t) => {
    const root = checkout(t, 200);
    writeFileSync(join(root, 'src/new-module.ts'), '');
    assert.equal(findStaleSource(root), join('src', 'new-module.ts'));
    rmSync(join(root, 'src'), { recursive: true });
    assert.equal(findStaleSource(root), undefined);
  });

  it('includes the files the build copies as they are', (t) => {
    const root = checkout(t, 200);
    mkdirSync(join(root, 'docs'));
    writeFileSync(join(root, 'docs/API.md'), '');
    assert.equal(findStaleSource(root), join('docs', 'API.md'));
    mkdirSync(join(root, 'dist/docs'));
    writeFileSync(join(root, 'dist/docs/API.md'), '');
    assert.equal(findStaleSource(root), undefined);
  });
});

describe('npm prepare', () => {
  /**
   * A copy of the freshness check and the build's own module in a checkout of one source, built at 200
   * (seconds since the epoch) from inputs of 100: what `prepare` asks before it builds.
   */
  function builtCheckout(t: TestContext): string {
    const root = mkdtempSync(join(tmpdir(), 'catalogue-prepare-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    mkdirSync(join(root, 'scripts'));
    cpSync(join(ROOT, 'scripts/build-is-current.mjs'), join(root, 'scripts/build-is-current.mjs'));
    mkdirSync(join(root, 'dist'));
    cpSync(join(ROOT, 'dist/build-freshness.js'), join(root, 'dist/build-freshness.js'));
    for (const [path, at] of [['src/service.ts', 100], ['package.json', 100], ['package-lock.json', 100], ['dist/service.js', 200], ['dist/build-freshness.js', 200]] as const) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      if (path !== 'dist/build-freshness.js') writeFileSync(join(root, path), path === 'package.json' ? '{"type": "module"}' : '');
      utimesSync(join(root, path), at, at);
    }
    return root;
  }
  const isCurrent = async (root: string): Promise<boolean> => (await runCommand({}, [join(root, 'scripts/build-is-current.mjs')])).code === 0;

  it('keeps a build that is current (npm 10 runs it on every npx catalogue), and builds after a source, the lock file or a build setting changed', async (t) => {
    const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.equal(scripts['prepare'], 'node scripts/build-is-current.mjs || npm run build');
    await ensureBuild();
    const root = builtCheckout(t);
    assert.equal(await isCurrent(root), true);
    for (const changed of ['src/service.ts', 'package-lock.json', 'tsconfig.json']) {
      const fresh = builtCheckout(t);
      writeFileSync(join(fresh, changed), '');
      utimesSync(join(fresh, changed), 300, 300);
      assert.equal(await isCurrent(fresh), false, changed);
    }
    rmSync(join(root, 'dist/service.js'));
    assert.equal(await isCurrent(root), false, 'no bundle');
  });
});
