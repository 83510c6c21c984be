import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ROOT } from './helpers/build.js';
import { runCommand } from './helpers/child-server.js';
import { outsideSql } from './helpers/outside-sql.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { sqlite } from './helpers/stores.js';

/** The catalogue's identity in the README's answers of the change feed. */
const README_CATALOGUE_ID = '5f0c3e1a-8a1d-4b7e-9c36-2d4f1e0b7a95';

/** The line that marks an answer shown with its headers as abridged. */
const ABRIDGED = '...';
/**
 * What an abridged answer may leave out, as the README says: the headers every answer carries.
 * Any other header must be shown, with its value.
 */
const LEFT_OUT_WHEN_ABRIDGED = ['x-request-id', 'access-control-expose-headers', 'content-length', 'date', 'connection', 'keep-alive'];

/** `name: value` lines as [lower-case name, value] pairs. */
function headerPairs(lines: readonly string[]): Array<[string, string]> {
  return lines.map((line) => {
    const colon = line.indexOf(':');
    return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
  });
}

interface Example {
  readonly env: Record<string, string>;
  readonly command: string;
  readonly language: 'json' | 'http';
  readonly expected: string;
}

/** Every `sh` block that runs curl, with the `json` or `http` block that follows it. */
function readExamples(markdown: string): Example[] {
  const blocks = [...markdown.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ language: m[1]!, text: m[2]!.trimEnd() }));
  const examples: Example[] = [];
  blocks.forEach((block, i) => {
    const lines = block.text.split('\n');
    const command = lines.find((line) => line.startsWith('curl '));
    if (block.language !== 'sh' || command === undefined) return;
    const answer = blocks[i + 1];
    assert.ok(answer && (answer.language === 'json' || answer.language === 'http'), `no answer after: ${command}`);
    const env = Object.fromEntries(
      lines.filter((line) => /^# [A-Z_]+=/.test(line)).map((line) => line.slice(2).split('=') as [string, string]),
    );
    examples.push({ env, command, language: answer.language, expected: answer.text });
  });
  return examples;
}

describe('README examples, replayed in order on a fresh catalogue', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const examples = readExamples(readme);
  let server: RunningServer | undefined;
  let serverEnv = '';
  let drop: (() => Promise<void>) | undefined;

  after(async () => {
    await server?.stop();
    await drop?.();
  });

  it('has an example for every route', () => {
    const commands = examples.map((e) => e.command).join('\n');
    for (const route of ['/api/v1/shop/products', '/api/v1/shop/product/1', '-X POST localhost:8000/api/v1/shop/product/', '/api/v2/shop/products', '-X OPTIONS']) {
      assert.ok(commands.includes(route), route);
    }
  });

  it('says what an abridged answer leaves out', () => {
    const [intro = ''] = readme.split('Create a product (');
    assert.match(intro, /abridged where a line `\.\.\.`/);
    for (const name of LEFT_OUT_WHEN_ABRIDGED) assert.ok(intro.includes(`\`${name}\``), name);
  });

  for (const example of examples) {
    it(example.command, async () => {
      const envKey = JSON.stringify(example.env);
      if (server === undefined || envKey !== serverEnv) {
        if (server === undefined) {
          const created = await sqlite.create();
          drop = created.drop;
          server = await startServer(created.location, example.env);
          // A catalogue's identity is random: the README shows this one.
          await outsideSql(created.location, `UPDATE catalogue_state SET catalogue_id = '${README_CATALOGUE_ID}' WHERE id = 0`);
        } else {
          const location = server.location;
          await server.stop();
          server = await startServer(location, example.env);
        }
        serverEnv = envKey;
      }
      const host = server.url.replace('http://', '');
      const command = example.command.replaceAll('localhost:8000', host);
      const { code, stdout, stderr } = await runCommand({}, ['-c', command], { command: 'sh' });
      assert.equal(code, 0, `${command}: ${stderr}`);
      const expected = example.expected.replaceAll('localhost:8000', host);
      if (example.language === 'json') {
        assert.equal(stdout, expected);
        return;
      }
      const [head = '', body = ''] = stdout.replaceAll('\r', '').split('\n\n');
      const [expectedHead = '', expectedBody = ''] = expected.split('\n\n');
      const [statusLine, ...headerLines] = head.split('\n');
      const [expectedStatus, ...expectedLines] = expectedHead.split('\n');
      assert.equal(statusLine, expectedStatus);
      assert.equal(body, expectedBody);
      const actual = headerPairs(headerLines);
      const shown = headerPairs(expectedLines.filter((line) => line !== ABRIDGED));
      if (!expectedLines.includes(ABRIDGED)) {
        // Not marked abridged: the answer is shown whole, every header with its value.
        assert.deepEqual(actual.sort(), shown.sort());
        return;
      }
      for (const [name, value] of shown) {
        assert.deepEqual(actual.filter(([n]) => n === name).map(([, v]) => v), [value], `header ${name}`);
      }
      const leftOut = actual.map(([name]) => name).filter((name) => !shown.some(([n]) => n === name));
      assert.ok(leftOut.length > 0, 'marked abridged, but nothing is left out');
      assert.deepEqual(leftOut.filter((name) => !LEFT_OUT_WHEN_ABRIDGED.includes(name)), [], 'left out, but the README says it is shown');
    });
  }
});
