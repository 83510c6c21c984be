import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    assert.deepEqual(loadConfig({}), {
      port: 8000,
      host: '127.0.0.1',
      database: { kind: 'sqlite', path: './data/catalogue.db' },
      dbPoolMax: 10,
      pagination: 'limit-offset',
      pageSize: 100,
      maxLimit: 1000,
      corsOrigin: '*',
      logLevel: 'info',
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
    });
    assert.equal(config.port, 9000);
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
      () => loadConfig({ PORT: 'eighty', PAGINATION: 'cursor', PAGE_SIZE: '0', DATABASE_URL: 'mysql://x', CORS_ORIGIN: 'shop' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(
          error.problems.map((p) => p.split('=')[0]),
          ['PORT', 'DATABASE_URL', 'PAGINATION', 'PAGE_SIZE', 'CORS_ORIGIN'],
        );
        return true;
      },
    );
  });

  it('refuses a page size above the maximum', () => {
    assert.throws(() => loadConfig({ PAGE_SIZE: '200', MAX_LIMIT: '100' }), /PAGE_SIZE=200 is not valid/);
  });

  it('never shows a database password', () => {
    assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://u:secret@' }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.doesNotMatch(error.message, /secret/);
      return true;
    });
  });
});
