import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WORKER_SEMI_SPACE_MB, workerExecArgv } from '../../src/workers/worker-heap.js';

describe("a worker's young generation", () => {
  it('is sized for the worker after the options the primary was started with', () => {
    assert.deepEqual(workerExecArgv(['--enable-source-maps'], undefined), ['--enable-source-maps', `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`]);
    assert.deepEqual(workerExecArgv([], '--max-old-space-size=512'), [`--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`]);
  });

  it("is the operator's where the operator sized it, on the command line or in NODE_OPTIONS, in either spelling", () => {
    assert.deepEqual(workerExecArgv(['--max-semi-space-size=32'], undefined), ['--max-semi-space-size=32']);
    assert.deepEqual(workerExecArgv(['--max_semi_space_size=2'], undefined), ['--max_semi_space_size=2']);
    assert.deepEqual(workerExecArgv([], '--enable-source-maps --max-semi-space-size=4'), []);
    assert.deepEqual(workerExecArgv([], '--max_semi_space_size=4'), []);
  });
});
