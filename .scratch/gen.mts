import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startServer } from '../test/helpers/server.js';
const s = await startServer({ kind: 'sqlite', path: ':memory:' });
try {
  const r = await promisify(execFile)('npx', ['openapi-typescript', `${s.url}/openapi.json`, '-o', 'examples/till/catalogue-api.ts']);
  console.log(r.stdout, r.stderr);
} finally { await s.stop(); }
