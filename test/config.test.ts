import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, isLoopbackHost, loadConfig, redactPassword, startupWarnings } from '../src/config.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    assert.deepEqual(loadConfig({}, 6), {
      port: 8000,
      host: '127.0.0.1',
      database: { kind: 'sqlite', path: './data/catalogue.db' },
      dbPoolMax: 10,
      writeWaitMs: 3000,
      workers: 6,
      changeStreamsMax: 1000,
      changeStreamsMemoryBytes: 32 * 2 ** 20,
      pagination: 'limit-offset',
      pageSize: 100,
      maxLimit: 1000,
      corsOrigin: '*',
      logLevel: 'info',
      apiToken: undefined,
      rateLimit: undefined,
      trustProxy: false,
      migrateOnStart: true,
    });
  });

  it('reads every setting', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test',
      PAGINATION: 'page-number',
      PAGE_SIZE: '20',
      MAX_LIMIT: '50',
      CORS_ORIGIN: 'https://shop.example, http://localhost:3000',
      WRITE_WAIT_MS: '10000',
      CHANGE_STREAMS_MAX: '50',
      CHANGE_STREAMS_MEMORY_MB: '8',
    });
    assert.equal(config.port, 9000);
    assert.equal(config.writeWaitMs, 10_000);
    assert.equal(config.changeStreamsMax, 50);
    assert.equal(config.changeStreamsMemoryBytes, 8 * 2 ** 20);
    assert.equal(config.host, '0.0.0.0');
    assert.deepEqual(config.database, { kind: 'postgres', url: 'postgres://postgres@127.0.0.1:5432/test' });
    assert.equal(config.pagination, 'page-number');
    assert.equal(config.pageSize, 20);
    assert.equal(config.maxLimit, 50);
    assert.deepEqual(config.corsOrigin, ['https://shop.example', 'http://localhost:3000']);
    assert.ok(Object.isFrozen(config));
  });

  it('reports every bad setting at once, by name', () => {
    assert.throws(
      () => loadConfig({ PORT: 'eighty', PAGINATION: 'cursor', PAGE_SIZE: '0', DATABASE_URL: 'mysql://x', CORS_ORIGIN: 'shop', WRITE_WAIT_MS: '10', CHANGE_STREAMS_MAX: '0', CHANGE_STREAMS_MEMORY_MB: '0' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(
          error.problems.map((p) => p.split('=')[0]),
          ['PORT', 'DATABASE_URL', 'WRITE_WAIT_MS', 'CHANGE_STREAMS_MAX', 'CHANGE_STREAMS_MEMORY_MB', 'PAGINATION', 'PAGE_SIZE', 'CORS_ORIGIN'],
        );
        return true;
      },
    );
  });

  it('refuses a page size above the maximum', () => {
    assert.throws(() => loadConfig({ PAGE_SIZE: '200', MAX_LIMIT: '100' }), /PAGE_SIZE=200 is not valid/);
  });

  it('hides every password a database URL can carry', () => {
    assert.equal(
      redactPassword('postgres://u:secret@db:5432/shop?sslmode=require&password=Sup3r&sslpassword=Key%20pw#x'),
      'postgres://u:***@db:5432/shop?sslmode=require&password=***&sslpassword=***#x',
    );
    assert.equal(redactPassword('postgresql://db/shop?PASSWORD=s3cret'), 'postgresql://db/shop?PASSWORD=***');
  });

  it('never shows a database password', () => {
    assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://u:secret@' }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.doesNotMatch(error.message, /secret/);
      return true;
    });
  });

  it('reads the token and the rate limit', () => {
    const config = loadConfig({ API_TOKEN: 'a-long-enough-token-1234', RATE_LIMIT: '100/minute' });
    assert.equal(config.apiToken, 'a-long-enough-token-1234');
    assert.deepEqual(config.rateLimit, { max: 100, windowMs: 60_000 });
    assert.deepEqual(loadConfig({ RATE_LIMIT: '5 / second' }).rateLimit, { max: 5, windowMs: 1000 });
  });

  it('refuses a short token without showing it, and a malformed rate limit', () => {
    assert.throws(
      () => loadConfig({ API_TOKEN: 'short secret', RATE_LIMIT: '100 per minute' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems.map((p) => p.split(/[ =]/)[0]), ['API_TOKEN', 'RATE_LIMIT']);
        assert.doesNotMatch(error.message, /short secret/);
        return true;
      },
    );
    for (const bad of ['0/minute', '10/day', 'many/second', '-1/hour']) {
      assert.throws(() => loadConfig({ RATE_LIMIT: bad }), /RATE_LIMIT=/, bad);
    }
  });

  it('warns when anyone on the network could create products', () => {
    const token = 'a-long-enough-token-1234';
    assert.equal(startupWarnings(loadConfig({ HOST: '0.0.0.0' })).length, 1);
    assert.match(startupWarnings(loadConfig({ HOST: '0.0.0.0' }))[0]!, /API_TOKEN is not set/);
    assert.deepEqual(startupWarnings(loadConfig({ HOST: '0.0.0.0', API_TOKEN: token })), []);
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost']) {
      assert.ok(isLoopbackHost(host), host);
      assert.deepEqual(startupWarnings(loadConfig({ HOST: host })), [], host);
    }
    assert.equal(isLoopbackHost('192.168.1.5'), false);
  });

  it('reads how many workers serve: auto is one per core, one over a database in memory', () => {
    assert.equal(loadConfig({ WORKERS: '3' }, 8).workers, 3);
    assert.equal(loadConfig({ WORKERS: 'auto' }, 8).workers, 8);
    assert.equal(loadConfig({ WORKERS: 'AUTO' }, 1).workers, 1);
    assert.equal(loadConfig({ WORKERS: 'auto', DATABASE_URL: 'sqlite::memory:' }, 8).workers, 1);
    assert.equal(loadConfig({ WORKERS: '1', DATABASE_URL: 'sqlite::memory:' }, 8).workers, 1);
    for (const bad of ['0', '-1', '2.5', 'many', '257']) {
      assert.throws(() => loadConfig({ WORKERS: bad }), (error: ConfigError) => {
        assert.deepEqual(error.problems, [`WORKERS=${JSON.stringify(bad)} is not valid: expected auto (one per core) or a whole number from 1 to 256.`]);
        return true;
      });
    }
    assert.throws(() => loadConfig({ WORKERS: '2', DATABASE_URL: 'sqlite::memory:' }), /WORKERS=2 is not valid with DATABASE_URL=sqlite::memory:/);
  });

  it('reads whether to migrate at start', () => {
    for (const [text, value] of [['false', false], ['FALSE', false], ['0', false], ['true', true], ['1', true], ['', true]] as const) {
      assert.equal(loadConfig({ MIGRATE_ON_START: text }).migrateOnStart, value, text);
    }
    for (const bad of ['no', 'off', 'yes', 'toString']) {
      assert.throws(() => loadConfig({ MIGRATE_ON_START: bad }), /MIGRATE_ON_START="[a-z]+" is not valid: expected true or false\./, bad);
    }
  });

  it('reads which proxies to trust', () => {
    assert.equal(loadConfig({ TRUST_PROXY: '1' }).trustProxy, 1);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1, ::1' }).trustProxy, ['10.0.0.0/8', '127.0.0.1', '::1']);
    for (const bad of ['0', '11', 'yes', '10.0.0.0/33', '300.1.1.1', 'proxy.example']) {
      assert.throws(() => loadConfig({ TRUST_PROXY: bad }), /TRUST_PROXY=/, bad);
    }
  });
});
