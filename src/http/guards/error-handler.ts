import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { DuplicateBarcodeError, InvalidProductError, PksExhaustedError, RestoreRunningError, SearchCatchingUpError, StoreBusyError, StoreTimeoutError, StoreUnavailableError } from '../../catalogue/errors.js';
import { BODY_LIMIT_BYTES, UNSUPPORTED_MEDIA_TYPE } from './json-body.js';
import { HttpProblem, sendProblem } from '../contract/problem.js';
import { BUSY_RETRY_AFTER_SECONDS, STORE_RETRY_AFTER_SECONDS } from '../contract/responses.js';

/**
 * Maps every error to a problem document, in one place: domain errors to their statuses, Fastify's
 * client errors to theirs, anything else to a 500 that is logged and says nothing of internals.
 */
export function useProblemErrors(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    if (error instanceof HttpProblem) {
      reply.headers(error.headers);
      return sendProblem(reply, error.status, error.message, error.errors);
    }
    if (error instanceof InvalidProductError) {
      return sendProblem(reply, 400, error.message, error.errors);
    }
    if (error instanceof DuplicateBarcodeError) {
      return sendProblem(reply, 409, error.message, { barcode: ['A product with this barcode is already in the catalogue.'] });
    }
    if (error instanceof StoreUnavailableError) {
      request.log.warn({ err: error.cause }, 'database unreachable');
      reply.header('Retry-After', String(STORE_RETRY_AFTER_SECONDS));
      return sendProblem(reply, 503, 'The catalogue database is not reachable right now; try again shortly.');
    }
    if (error instanceof StoreBusyError) {
      request.log.warn({ err: error }, 'gave up waiting for the catalogue\'s write lock');
      reply.header('Retry-After', String(BUSY_RETRY_AFTER_SECONDS));
      // A read meets it only behind a lock taken outside the service (LOCK TABLE, a migration by hand).
      const reading = request.method === 'GET' || request.method === 'HEAD';
      return sendProblem(
        reply,
        503,
        reading ? 'The catalogue is locked by another connection for longer than the service waits. Try again in a moment.' : 'The catalogue is busy with another write; nothing was changed. Try again in a moment.',
      );
    }
    if (error instanceof PksExhaustedError) {
      request.log.error({ err: error.cause }, error.message);
      return sendProblem(reply, 507, `${error.message} Products can no longer be created in this catalogue.`);
    }
    if (error instanceof RestoreRunningError) {
      reply.header('Retry-After', String(STORE_RETRY_AFTER_SECONDS));
      return sendProblem(reply, 503, `${error.message} Try again once the restore has finished.`);
    }
    if (error instanceof SearchCatchingUpError) {
      reply.header('Retry-After', String(STORE_RETRY_AFTER_SECONDS));
      return sendProblem(reply, 503, `${error.message} Try again in a few seconds; listings without search are not affected.`);
    }
    if (error instanceof StoreTimeoutError) {
      request.log.warn({ err: error }, error.message);
      reply.header('Retry-After', String(STORE_RETRY_AFTER_SECONDS));
      return sendProblem(reply, 503, 'The catalogue database did not answer in time; nothing was changed. Try again shortly.');
    }
    const status = 'statusCode' in error && typeof error.statusCode === 'number' ? error.statusCode : 500;
    // The file servers of the page and the docs refuse a path that leads out of their folder (`..`)
    // with a 403: there is nothing at such a path, and the answer says no more than that.
    if (status === 403) return sendProblem(reply, 404, nothingAt(request));
    if (status >= 400 && status < 500) {
      return sendProblem(reply, status, clientErrorDetail(error as FastifyError));
    }
    request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, 500, 'Something went wrong on our side; it has been logged.');
  });

  app.setNotFoundHandler((request, reply) => sendProblem(reply, 404, nothingAt(request)));
}

/** The 404's detail for a path that is no route. */
export function nothingAt(request: Pick<FastifyRequest, 'method' | 'url'>): string {
  return `There is nothing at ${request.method} ${request.url.split('?')[0]}.`;
}

function clientErrorDetail(error: FastifyError): string {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `The body is larger than the limit of ${BODY_LIMIT_BYTES} bytes.`;
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return UNSUPPORTED_MEDIA_TYPE;
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'The body is empty; send a JSON object.';
    default:
      return error.message;
  }
}
