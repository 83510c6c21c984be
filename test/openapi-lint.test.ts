import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ROOT } from './helpers/build.js';
import { send } from './helpers/http.js';
import { runPackageBin } from './helpers/package-bin.js';
import { startFreshServer } from './helpers/server.js';
import { sqlite } from './helpers/stores.js';

const CONFIG_DIR = join(ROOT, 'test/openapi-lint/');

/**
 * The only warnings the reference may give, each with its reason. Anything else, and any error,
 * fails: a new warning must be fixed or justified here.
 */
const JUSTIFIED_WARNINGS: Readonly<Record<string, string>> = {
  // Each shop deploys its own catalogue: who to contact is the operator's to say, not the code's,
  // and a made-up address would send client developers to nobody.
  'spectral info-contact #/info': 'no contact: each deployment has its own operator',
  // The catalogue is not published under a licence; naming one would grant rights nobody granted.
  'redocly info-license #/info': 'no licence: the catalogue is not published under one',
};

/** Deployments whose documents differ: each paging style, and the token and rate limit that add answers. */
const DEPLOYMENTS: ReadonlyArray<Record<string, string>> = [
  {},
  { PAGINATION: 'page-number', API_TOKEN: 'lint-token-0123456789abcdef', RATE_LIMIT: '100/minute' },
];

interface Finding {
  readonly file: string;
  readonly severity: 'error' | 'warning';
  readonly key: string;
  readonly message: string;
}

async function spectral(files: readonly string[]): Promise<Finding[]> {
  const run = await runPackageBin('@stoplight/spectral-cli', 'spectral', ['lint', ...files, '--ruleset', join(CONFIG_DIR, 'spectral.yaml'), '--format', 'json', '--quiet']);
  const results = JSON.parse(run.stdout || '[]') as Array<{ code: string; message: string; severity: number; path: Array<string | number>; source: string }>;
  // Spectral's severities: 0 error, 1 warning, 2 information, 3 hint.
  return results.map((r) => ({
    file: basename(r.source),
    severity: r.severity === 0 ? 'error' : 'warning',
    key: `spectral ${r.code} #/${r.path.join('/')}`,
    message: r.message,
  }));
}

/** One file a run: given several, Redocly writes one JSON report after another, with nothing between. */
async function redocly(file: string): Promise<Finding[]> {
  const run = await runPackageBin('@redocly/cli', 'redocly', ['lint', file, '--config', join(CONFIG_DIR, 'redocly.yaml'), '--format', 'json'], {
    REDOCLY_TELEMETRY: 'off',
    REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  });
  const report = JSON.parse(run.stdout) as {
    problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string; source: { ref: string } }> }>;
  };
  return report.problems.map((p) => ({
    file: basename(p.location[0]?.source.ref ?? ''),
    severity: p.severity === 'error' ? 'error' : 'warning',
    key: `redocly ${p.ruleId} ${p.location[0]?.pointer ?? ''}`,
    message: p.message,
  }));
}

describe('the OpenAPI document', () => {
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-openapi-lint-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('passes spectral:oas and Redocly recommended in every kind of deployment, with only the justified warnings', async () => {
    const files: string[] = [];
    for (const [i, env] of DEPLOYMENTS.entries()) {
      const server = await startFreshServer(sqlite, env);
      try {
        const file = join(dir, `openapi-${i}.json`);
        writeFileSync(file, (await send(`${server.url}/openapi.json`)).text);
        files.push(file);
      } finally {
        await server.stop();
      }
    }
    const findings = await spectral(files);
    for (const file of files) findings.push(...(await redocly(file)));
    assert.deepEqual(
      findings.filter((f) => f.severity === 'error' || !Object.hasOwn(JUSTIFIED_WARNINGS, f.key)),
      [],
    );
    // A justification whose warning is gone is stale: the list stays exactly what the tools say.
    for (const file of files.map((f) => basename(f))) {
      assert.deepEqual(
        findings.filter((f) => f.file === file).map((f) => f.key).sort(),
        Object.keys(JUSTIFIED_WARNINGS).sort(),
        file,
      );
    }
  });
});
