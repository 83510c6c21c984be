import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startServer, type RunningServer } from './helpers/server.js';
import { STORES } from './helpers/stores.js';

const run = promisify(execFile);

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
  const examples = readExamples(readFileSync(new URL('../README.md', import.meta.url), 'utf8'));
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

  for (const example of examples) {
    it(example.command, async () => {
      const envKey = JSON.stringify(example.env);
      if (server === undefined || envKey !== serverEnv) {
        if (server === undefined) {
          const created = await STORES[0]!.create();
          drop = created.drop;
          server = await startServer(created.location, example.env);
        } else {
          const location = server.location;
          await server.stop();
          server = await startServer(location, example.env);
        }
        serverEnv = envKey;
      }
      const host = server.url.replace('http://', '');
      const command = example.command.replaceAll('localhost:8000', host);
      const { stdout } = await run('sh', ['-c', command]);
      const expected = example.expected.replaceAll('localhost:8000', host);
      if (example.language === 'json') {
        assert.equal(stdout, expected);
        return;
      }
      const [head = '', body = ''] = stdout.replaceAll('\r', '').split('\n\n');
      const [expectedHead = '', expectedBody = ''] = expected.split('\n\n');
      const [statusLine, ...headerLines] = head.split('\n');
      const [expectedStatus, ...expectedHeaders] = expectedHead.split('\n');
      assert.equal(statusLine, expectedStatus);
      const actualHeaders = headerLines.map((line) => line.toLowerCase());
      for (const line of expectedHeaders) assert.ok(actualHeaders.includes(line.toLowerCase()), `missing header: ${line}`);
      assert.equal(body, expectedBody);
    });
  }
});
