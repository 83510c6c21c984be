import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it, type TestContext } from 'node:test';
import { ensureBuild, ROOT } from '../helpers/build.js';
import { runCommand, type CommandResult } from '../helpers/child-server.js';
import { CATALOGUE, runCli, withPks } from '../helpers/cli.js';
import { uniqueBarcode } from '../helpers/products.js';

const SAMPLE = join(ROOT, 'samples/products.csv');

function folder(t: TestContext): string {
  const path = mkdtempSync(join(tmpdir(), 'catalogue-cli-'));
  t.after(() => rmSync(path, { recursive: true, force: true }));
  return path;
}

/** Runs a shell command line from the repository, as a user types it. */
function shell(command: string, env: Record<string, string>): Promise<CommandResult> {
  return runCommand(env, ['-c', command], { command: 'bash', cwd: ROOT });
}

/** npm's own notices on standard error (this machine's npm configuration may add some); never the command's. */
const withoutNpmNotices = (stderr: string) => stderr.replace(/^npm (warn|notice) .*\n/gm, '');

describe('the catalogue command', { timeout: 600_000 }, () => {
  before(() => ensureBuild());

  it('shows help on standard output for itself and every command, and does nothing else', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(folder(t), 'catalogue.db')}` };
    for (const [args, usage] of [
      [['--help'], 'Usage: catalogue <command> [options]'],
      [['help', 'export'], 'Usage: catalogue export [--format csv|json] [FILE]'],
      [['import', '--help'], 'Usage: catalogue import [--update] [--skip-invalid] [--wait[=SECONDS]] [--format csv|json] FILE'],
      [['export', '-h'], 'Usage: catalogue export [--format csv|json] [FILE]'],
      [['migrate', '--help'], 'Usage: catalogue migrate'],
      [['restore', '--help'], 'Usage: catalogue restore [--replace] [--format csv|json] FILE'],
      [['help', 'new-identity'], 'Usage: catalogue new-identity'],
      [['restore', '--replace', 'x.csv', '-h'], 'Usage: catalogue restore'],
      // Help comes before any complaint about the other arguments.
      [['import', '--bogus', 'a.csv', 'b.csv', '--help'], 'Usage: catalogue import'],
      [['export', '--format', 'xml', 'x', 'y', '-h'], 'Usage: catalogue export'],
      [['migrate', 'now', '--help'], 'Usage: catalogue migrate'],
    ] as const) {
      const [command, ...rest] = args;
      const result = await runCli(command, rest, env);
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
      assert.equal(result.stderr, '', args.join(' '));
      assert.ok(result.stdout.startsWith(usage), `${args.join(' ')}: ${result.stdout}`);
      assert.match(result.stdout, /Exit status: 0 /);
    }
    // Asking migrate for help migrated nothing: not even the database file exists.
    assert.equal(existsSync(env.DATABASE_URL.slice('sqlite:'.length)), false);
  });

  it('refuses a wrong command line with exit status 2, a reason and where to find the usage, on standard error', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(folder(t), 'catalogue.db')}` };
    for (const [args, message] of [
      [['frobnicate'], 'Unknown command "frobnicate"; the commands are import, remove, export, restore, new-identity, migrate.\nRun `catalogue --help` for the commands.'],
      [['import'], 'Name the FILE to import.\nRun `catalogue import --help` for its usage.'],
      [['import', 'a.csv', 'b.csv'], 'Expected one FILE, got 2.\nRun `catalogue import --help` for its usage.'],
      [['import', '--overwrite', 'a.csv'], 'Unknown option --overwrite.\nRun `catalogue import --help` for its usage.'],
      [['import', '--update=yes', 'a.csv'], '--update takes no value.\nRun `catalogue import --help` for its usage.'],
      [['import', '--wait=soon', 'a.csv'], '--wait takes a whole number of seconds from 0 to 86400, as --wait=600, not "soon".\nRun `catalogue import --help` for its usage.'],
      [['import', '--wait=86401', 'a.csv'], '--wait takes a whole number of seconds from 0 to 86400, as --wait=600, not "86401".\nRun `catalogue import --help` for its usage.'],
      [['remove', '--wait', '30', '4006381333931'], 'Give --wait its value after an equals sign: --wait=30.\nRun `catalogue remove --help` for its usage.'],
      [['export', '--format'], '--format needs a value.\nRun `catalogue export --help` for its usage.'],
      [['export', '--format', 'xml'], '--format must be csv or json, not "xml".\nRun `catalogue export --help` for its usage.'],
      [['migrate', 'now'], 'migrate takes no arguments, got now.\nRun `catalogue migrate --help` for its usage.'],
      [['restore'], 'Name the FILE to restore.\nRun `catalogue restore --help` for its usage.'],
      [['restore', '--update', 'a.csv'], 'Unknown option --update.\nRun `catalogue restore --help` for its usage.'],
      [['new-identity', 'now'], 'new-identity takes no arguments, got now.\nRun `catalogue new-identity --help` for its usage.'],
    ] as const) {
      const [command, ...rest] = args;
      assert.deepEqual(await runCli(command, rest, env), { code: 2, stdout: '', stderr: `${message}\n` }, args.join(' '));
    }
    assert.deepEqual(await shell(`node ${CATALOGUE}`, env), {
      code: 2,
      stdout: '',
      stderr: 'Name a command: import, remove, export, restore, new-identity, migrate.\nRun `catalogue --help` for the commands.\n',
    });
    assert.equal(existsSync(env.DATABASE_URL.slice('sqlite:'.length)), false);
  });

  it('writes clean data through `npx catalogue` and `npm run --silent`, and `npm run import` keeps working', async (t) => {
    const dir = folder(t);
    const env = { DATABASE_URL: `sqlite:${join(dir, 'catalogue.db')}` };
    const imported = await shell(`npm run --silent import -- ${SAMPLE}`, env);
    assert.equal(imported.code, 0, imported.stderr);
    assert.equal(imported.stdout, '');
    assert.equal(withoutNpmNotices(imported.stderr), `Imported 320 products from ${SAMPLE}.\n`);

    // An export writes each product's pk first; a fresh catalogue numbers the sample's products from 1.
    const sample = withPks(readFileSync(SAMPLE, 'utf8'));
    for (const command of ['npx catalogue export', 'npm run --silent export', 'npm run --silent export -- --format csv']) {
      const exported = await shell(command, env);
      assert.equal(exported.code, 0, `${command}: ${exported.stderr}`);
      assert.equal(exported.stdout, sample, command);
      assert.equal(withoutNpmNotices(exported.stderr), 'Exported 320 products.\n', command);
    }
    // The documented backup line: the file can be imported as it is.
    const backup = join(dir, 'catalogue.json');
    assert.equal((await shell(`npx catalogue export --format json > ${backup}`, env)).code, 0);
    const restored = { DATABASE_URL: `sqlite:${join(dir, 'restored.db')}` };
    assert.equal((await runCli('import', [backup], restored)).code, 0);
    assert.equal((await shell('npx catalogue export', restored)).stdout, sample);
  });

  it('ends quietly with status 0 when the reader of an export stops early', async (t) => {
    const dir = folder(t);
    const env = { DATABASE_URL: `sqlite:${join(dir, 'catalogue.db')}` };
    // Far more than a pipe holds, so the export is still writing when `head` leaves.
    const rows = Array.from({ length: 5000 }, (_, i) => `Product number ${i} with a longish name,${uniqueBarcode()},1.00`);
    const file = join(dir, 'many.csv');
    writeFileSync(file, ['name,barcode,price', ...rows].join('\n') + '\n');
    assert.equal((await runCli('import', [file], env)).code, 0);

    const piped = await shell(`set -o pipefail; node ${CATALOGUE} export | head -n 1`, env);
    assert.deepEqual(piped, { code: 0, stdout: 'pk,name,barcode,price\n', stderr: '' });
    const viaNpx = await shell('set -o pipefail; npx catalogue export --format json | head -c 1', env);
    assert.equal(viaNpx.code, 0, viaNpx.stderr);
    assert.equal(viaNpx.stdout, '[');
    assert.equal(withoutNpmNotices(viaNpx.stderr), '');
  });
});
