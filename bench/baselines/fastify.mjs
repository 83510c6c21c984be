// The framework's ceiling: the Fastify the service is built on, with the service's routes and one
// hook for the CORS header, answering bytes computed in advance. What the service adds beyond this
// is its own work per request.
import Fastify from 'fastify';
import { answerKey, loadAnswers, readArguments } from './answers.mjs';

const { file, port } = readArguments(process.argv.slice(2));
const { answers, routes } = loadAnswers(file);

const app = Fastify({ logger: false, keepAliveTimeout: 60_000 });
app.addHook('onRequest', (request, reply, done) => {
  reply.header('access-control-allow-origin', '*');
  done();
});
for (const { method, route } of routes) {
  app.route({
    method,
    url: route,
    handler: (request, reply) => {
      const answer = answers.get(answerKey(request.method, request.url));
      if (answer === undefined) reply.code(404).send();
      else reply.code(answer.status).headers(answer.headers).send(answer.body);
    },
  });
}
await app.listen({ port, host: '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
