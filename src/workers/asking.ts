/**
 * Questions and answers between the primary and its workers over Node's IPC channel. Every message of
 * the service carries `catalogue`, so that it never takes another library's messages for its own.
 */

/** What one side asks the other: `what` names the question, `args` its details. */
export interface Question {
  readonly catalogue: 'ask';
  readonly id: number;
  readonly what: string;
  readonly args?: unknown;
}

export interface Answer {
  readonly catalogue: 'answer';
  readonly id: number;
  /** The answer's value, or the message of the error that answering threw. */
  readonly value?: unknown;
  readonly error?: string;
  /** That error's name (`StoreBusyError`): the asker tells its kind by it, as the class does not cross. */
  readonly errorName?: string;
}

/**
 * Sends `message` to the other side; `sent` is told when it is written or why it could not be. Node
 * reports a channel already closed (a worker just killed, the primary gone) to that callback, and
 * without one as an 'error' event on the process object, which nothing listens for: the primary would
 * end with every worker.
 */
export type Send<M> = (message: M, sent: (error: Error | null) => void) => void;

/** The `Send` of one end of an IPC channel: a cluster worker, as its primary sees it, or a child process's own `process`. */
export function sendOver(channel: { send(message: unknown, sendHandle: undefined, callback: (error: Error | null) => void): boolean }): Send<Question | Answer> {
  return (message, sent) => {
    channel.send(message, undefined, sent);
  };
}

/** How long a question may go unanswered: a worker that does not answer in this time counts as failing. */
export const ANSWER_WITHIN_MS = 3000;

export function isQuestion(message: unknown): message is Question {
  return typeof message === 'object' && message !== null && (message as Question).catalogue === 'ask';
}

export function isAnswer(message: unknown): message is Answer {
  return typeof message === 'object' && message !== null && (message as Answer).catalogue === 'answer';
}

/**
 * One side's questions in flight over one channel: `ask` sends a question and resolves with its answer;
 * `settle` is given every answer that arrives.
 */
export class Questions {
  readonly #send: Send<Question>;
  readonly #waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void; timer: NodeJS.Timeout }>();
  #next = 0;

  constructor(send: Send<Question>) {
    this.#send = send;
  }

  /** Resolves with the other side's answer; rejects when it answers with an error, not in time, or the channel is closed. */
  ask(what: string, args?: unknown, withinMs = ANSWER_WITHIN_MS): Promise<unknown> {
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      const fail = (error: unknown): void => {
        if (!this.#waiting.delete(id)) return;
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      };
      const timer = setTimeout(() => fail(new Error(`no answer to ${what} within ${withinMs} ms`)), withinMs);
      this.#waiting.set(id, { resolve, reject, timer });
      try {
        this.#send({ catalogue: 'ask', id, what, args }, (error) => {
          if (error !== null) fail(error);
        });
      } catch (error) {
        fail(error);
      }
    });
  }

  settle(answer: Answer): void {
    const waiting = this.#waiting.get(answer.id);
    if (waiting === undefined) return;
    this.#waiting.delete(answer.id);
    clearTimeout(waiting.timer);
    if (answer.error === undefined) waiting.resolve(answer.value);
    else waiting.reject(Object.assign(new Error(answer.error), answer.errorName === undefined ? {} : { name: answer.errorName }));
  }

  /** Fails every question still waiting: the other side is gone. */
  failAll(reason: string): void {
    for (const [id, waiting] of this.#waiting) {
      this.#waiting.delete(id);
      clearTimeout(waiting.timer);
      waiting.reject(new Error(reason));
    }
  }
}

/** Answers `question` with what `answer` gives for it, sending the answer with `send`; a channel already closed is no failure. */
export function answerQuestion(question: Question, answer: (what: string, args: unknown) => Promise<unknown>, send: Send<Answer>): void {
  answer(question.what, question.args).then(
    (value) => sendQuietly(send, { catalogue: 'answer', id: question.id, value }),
    (error: unknown) =>
      sendQuietly(send, { catalogue: 'answer', id: question.id, ...(error instanceof Error ? { error: error.message, errorName: error.name } : { error: String(error) }) }),
  );
}

function sendQuietly(send: Send<Answer>, message: Answer): void {
  try {
    send(message, () => undefined);
  } catch {
    // The asker has gone (a worker stopping, the primary killed): nobody is left to tell.
  }
}
