import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { answerQuestion, isAnswer, Questions, sendOver, type Question } from '../../src/workers/asking.js';

/** A child process on an IPC channel that answers each question with its `what`. */
function echoingChild(): ChildProcess {
  const script = "process.on('message', (q) => process.send({ catalogue: 'answer', id: q.id, value: q.what }));";
  return spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
}

/** Questions to `child`, its answers settled as they arrive. */
function questionsTo(child: ChildProcess): Questions {
  const questions = new Questions(sendOver(child));
  child.on('message', (message: unknown) => {
    if (isAnswer(message)) questions.settle(message);
  });
  return questions;
}

describe('questions between processes', () => {
  it('are answered over the channel', async () => {
    const child = echoingChild();
    try {
      assert.equal(await questionsTo(child).ask('metrics'), 'metrics');
    } finally {
      child.kill();
    }
  });

  it('to a process whose channel has closed fail at once, and no error event ends the asker', async () => {
    // As the primary asks a worker just killed, before its exit is seen: Node reports the closed channel
    // as an 'error' event on the child unless the send has a callback, and nothing here listens for one.
    const child = echoingChild();
    const questions = questionsTo(child);
    child.disconnect();
    // Given ten minutes to answer: it fails with the closed channel, not with a time limit that ran out.
    await assert.rejects(questions.ask('write-heard', undefined, 600_000), { code: 'ERR_IPC_CHANNEL_CLOSED' });

    const question: Question = { catalogue: 'ask', id: 1, what: 'metrics' };
    answerQuestion(question, async () => 'answered', sendOver(child));
    // Node reports a failed send on the next tick; an error event would fail the test as uncaught by then.
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(child.listenerCount('error'), 0);
    child.kill();
    await once(child, 'exit');
  });
});
