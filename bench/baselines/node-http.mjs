// The platform's ceiling: bare node:http answering the scenario's requests with bytes computed in
// advance, a map lookup per request and nothing else.
import { createServer } from 'node:http';
import { answerKey, loadAnswers, readArguments } from './answers.mjs';

const { file, port } = readArguments(process.argv.slice(2));
const answers = new Map();
for (const [key, answer] of loadAnswers(file).answers) {
  answers.set(key, { ...answer, headers: { ...answer.headers, 'access-control-allow-origin': '*', 'content-length': String(answer.body.length) } });
}
const notFound = { 'access-control-allow-origin': '*', 'content-length': '0' };

const server = createServer((request, response) => {
  const answer = answers.get(answerKey(request.method, request.url));
  if (answer === undefined) {
    response.writeHead(404, notFound).end();
  } else if (request.method === 'GET' || request.method === 'HEAD') {
    response.writeHead(answer.status, answer.headers).end(answer.body);
  } else {
    // A request with a body is read to its end first, as any real server must before answering.
    request.resume();
    request.once('end', () => response.writeHead(answer.status, answer.headers).end(answer.body));
  }
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1');
process.once('SIGTERM', () => server.close(() => process.exit(0)));
