// Plain JavaScript, run by plain `node` as the service's build is: a TypeScript loader would add its
// own memory and start-up to the ceilings the service is compared with.
import { readFileSync } from 'node:fs';

/**
 * @typedef {{ method: string, route: string, path: string, status: number, headers: Record<string, string>, start: number, length: number }} AnswerEntry
 * @typedef {{ status: number, headers: Record<string, string>, body: Buffer }} Answer
 */

/**
 * Reads the answers the bench computed for one scenario: `FILE` lists them, `FILE.body` holds their bytes.
 * @param {string} file
 * @returns {{ answers: Map<string, Answer>, routes: Array<{ method: string, route: string }> }}
 */
export function loadAnswers(file) {
  const blob = readFileSync(`${file}.body`);
  /** @type {AnswerEntry[]} */
  const entries = JSON.parse(readFileSync(file, 'utf8'));
  const answers = new Map();
  const routes = new Map();
  for (const entry of entries) {
    answers.set(answerKey(entry.method, entry.path), { status: entry.status, headers: entry.headers, body: blob.subarray(entry.start, entry.start + entry.length) });
    routes.set(`${entry.method} ${entry.route}`, { method: entry.method, route: entry.route });
  }
  return { answers, routes: [...routes.values()] };
}

/**
 * @param {string | undefined} method
 * @param {string | undefined} path
 */
export function answerKey(method, path) {
  return `${method} ${path}`;
}

/** @param {string[]} argv */
export function readArguments(argv) {
  const [file, portText] = argv;
  if (file === undefined || portText === undefined) {
    console.error('usage: node BASELINE.mjs ANSWERS_FILE PORT');
    process.exit(2);
  }
  return { file, port: Number(portText) };
}
