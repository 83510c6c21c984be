import { Readable } from 'node:stream';
import Negotiator from 'negotiator';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { FieldErrors } from '../../catalogue/product.js';
import type { CatalogueStore } from '../../storage/store.js';
import { asEventStream, type ChangeStreams } from '../feed/change-streams.js';
import { CachedAnswers, addVary } from '../answers/cached-answers.js';
import { pageLink, wholeNumber } from '../contract/pagination.js';
import { HttpProblem } from '../contract/problem.js';
import { linkedAnswerKey, requestAddress } from '../guards/request-address.js';
import { resource } from './resource.js';
import { BUSY_RETRY_AFTER_SECONDS, ETAG_HEADER, STORE_UNAVAILABLE, jsonResponse, problemResponse } from '../contract/responses.js';

/** Changes per answer unless `limit` says otherwise, and the most it may ask for. */
export const CHANGES_LIMIT = Object.freeze({ default: 1_000, max: 10_000 });

/** Memory for serialized answers of the current generation. */
const CACHE_BYTES = 32 * 1024 * 1024;
const CACHE_ENTRIES = 10_000;

export interface ChangesOptions {
  readonly store: CatalogueStore;
  /** The instance's open streams, closed by the app when it stops. */
  readonly streams: ChangeStreams;
}

/**
 * The change feed, `GET /api/v2/shop/changes`: every product changed after a version, in version
 * order, a page at a time; with `Accept: text/event-stream`, the same as server-sent events, then
 * every new change as it is committed.
 */
export async function changes(app: FastifyInstance, { store, streams }: ChangesOptions): Promise<void> {
  const pages = new CachedAnswers(store, CACHE_BYTES, CACHE_ENTRIES);

  resource(app, '/api/v2/shop/changes', {
    GET: {
      options: {
        // The querystring schema documents the parameters; readChangesQuery checks them, with messages naming each.
        validatorCompiler: () => (value: unknown) => ({ value }),
        schema: {
          operationId: 'listChanges',
          summary: 'What changed since a version: to keep a copy of the catalogue in step',
          description: [
            'Every product whose version is greater than `since`, once, in its state now, in version order; `product: null` means it was removed (left out when `since` is 0: a new copy has nothing to remove).',
            '`version` is the catalogue\'s version in the same snapshot: keep it and ask `since=` it next time. `next` is null when the answer holds every change up to `version`; otherwise follow it.',
            '`catalogue_id` is the catalogue\'s identity: it changes whenever the catalogue\'s history is cut (a restored backup). A copy made under another identity is not of this catalogue: drop it and start again from `since=0`.',
            'A client that always resumes from a version it was given never misses a change and never sees one out of order, whatever writes at the same time on however many instances.',
            '',
            'With `Accept: text/event-stream` (a browser\'s EventSource) the answer is a stream of server-sent events: first `event: catalogue` (data `{"catalogue_id": …}`), then every change after the starting point (`Last-Event-ID` when sent, else `since`) as `event: change` with `id:` its version, then `event: caught-up` (data `{"version": N, "catalogue_id": …}`), then each new change as it is committed. The stream ends when the identity changes. A comment line every 15 s keeps proxies from closing it.',
            '',
            'Carries a strong ETag (JSON answers); send it back in If-None-Match for a 304 while nothing changed.',
          ].join('\n'),
          tags: ['v2'],
          querystring: Type.Object({
            since: Type.Optional(Type.String({ description: 'A version: a whole number ≥ 0 in plain digits; absent: 0 (a whole copy).', examples: ['1202'] })),
            limit: Type.Optional(
              Type.String({ description: `Changes in this answer: a whole number ≥ 1 in plain digits; default ${CHANGES_LIMIT.default}; above ${CHANGES_LIMIT.max}, ${CHANGES_LIMIT.max}. Not for streams.`, examples: ['500'] }),
            ),
          }),
          headers: Type.Object({
            'last-event-id': Type.Optional(Type.String({ description: 'With text/event-stream: the version to resume after (EventSource sends it when it reconnects); wins over `since`.' })),
          }),
          response: {
            200: {
              description: 'A page of changes (JSON), or the stream of them (text/event-stream).',
              headers: { ETag: ETAG_HEADER },
              content: {
                'application/json': { schema: Type.Ref('ChangePage') },
                'text/event-stream': { schema: Type.String({ description: 'Server-sent events: `catalogue` (data: {"catalogue_id": …}), `change` (data: a Change), `caught-up` (data: {"version": N, "catalogue_id": …}), and keep-alive comments.' }) },
              },
            },
            304: { description: 'Not modified: the ETag in If-None-Match is still current. No body.', type: 'null' },
            400: problemResponse('`since`, `limit` or `Last-Event-ID` is not valid; `errors` names it.'),
            409: problemResponse('`since` is ahead of this catalogue\'s version: the copy does not come from this catalogue (a restored backup, another database). Start again from 0.'),
            503: {
              ...STORE_UNAVAILABLE,
              description: `${STORE_UNAVAILABLE.description} For a stream also: this instance holds as many streams as it may (CHANGE_STREAMS_MAX); retry after ${BUSY_RETRY_AFTER_SECONDS} s or on another instance.`,
            },
          },
        },
      },
      handler: async (request, reply) => {
        const address = requestAddress(request);
        // The same URL is a stream or a page by Accept: a shared cache must not hand one for the other,
        // nor keep a refusal (a 409, a 503) for both.
        addVary(reply, 'Accept');
        if (wantsStream(request)) {
          const { since, from } = readStart(request, address.params);
          const { version } = await store.describeCatalogue();
          if (since > version) throw aheadOfCatalogue(since, version, from);
          if (!(await streams.claim())) {
            throw new HttpProblem(503, `This instance follows as many change streams as it may (${streams.max}); try again shortly.`, {
              headers: { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) },
            });
          }
          // HEAD: the stream's headers, no stream. A body of nothing, as Fastify's HEAD handling would
          // state `Content-Length: 0` for none, where a stream has no length.
          if (request.method === 'HEAD') {
            streams.release();
            return asEventStream(reply).send(Readable.from([]));
          }
          return streams.follow(request, reply, since);
        }
        // Only valid requests are kept, so a kept answer needs no parsing of the query.
        return pages.answer(request, reply, linkedAnswerKey(request), async () => {
          const { since, limit } = readChangesQuery(address.params);
          const page = await store.readChangesJson(since, limit);
          if (since > page.version) throw aheadOfCatalogue(since, page.version, 'since');
          const next = page.more && page.lastVersion !== undefined ? pageLink(address.base, address.path, address.params, { since: page.lastVersion, ...(address.params.has('limit') ? { limit } : {}) }) : null;
          // A ChangePage, around the changes the database wrote as JSON: a page holds up to 10,000.
          const start = `{"catalogue_id":${JSON.stringify(page.catalogue)},"version":${page.version},"changes":`;
          const end = `,"next":${JSON.stringify(next)}}`;
          const changes = page.changesJson;
          if (typeof changes === 'string') return start + changes + end;
          return Buffer.concat([Buffer.from(start), changes, Buffer.from(end)]);
        });
      },
    },
  });
}

/**
 * The answer's forms, the default first: a client that accepts anything (`*\/*`) gets the page. Each
 * with the parameter its answer carries, so that an `Accept` naming it (`text/event-stream;
 * charset=utf-8`) matches, as one without parameters does.
 */
const FORMS = ['application/json; charset=utf-8', 'text/event-stream; charset=utf-8'];

/**
 * Whether the client prefers server-sent events (EventSource sends `Accept: text/event-stream`): named
 * in `Accept` (in any case; `text/*` alone does not name it), with a weight above 0, and first by
 * negotiation: weight, then specificity, then the client's order. Without an `Accept`, or when neither
 * form is acceptable, the page is answered, as on every other route.
 */
function wantsStream(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  if (accept === undefined || !/\btext\/event-stream\b/i.test(accept)) return false;
  return new Negotiator(request).mediaType(FORMS) === FORMS[1];
}

/** `since` and `limit`, or a 400 naming each bad one. */
function readChangesQuery(params: URLSearchParams): { since: number; limit: number } {
  const errors: FieldErrors = {};
  const since = wholeNumber(params, 'since', 0, errors);
  const limit = wholeNumber(params, 'limit', 1, errors, { huge: 'largest' });
  if (Object.keys(errors).length > 0) throw new HttpProblem(400, 'The change feed parameters are not valid.', { errors });
  return { since: since ?? 0, limit: Math.min(limit ?? CHANGES_LIMIT.default, CHANGES_LIMIT.max) };
}

/**
 * Where a stream starts, and which of the two said so: after `Last-Event-ID` when the client sends one
 * (EventSource resuming), else after `since`. Both are checked whichever wins: a `since` that is no
 * version is a 400 either way, and so is a `Last-Event-ID` sent twice (Node would join the two).
 */
function readStart(request: FastifyRequest, params: URLSearchParams): { since: number; from: StartParameter } {
  const errors: FieldErrors = {};
  const sent: [string, string][] = [];
  const raw = request.raw.rawHeaders;
  // Node hands header bytes over one per character (latin1): read as UTF-8, a message quotes them as sent.
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === 'last-event-id') sent.push(['Last-Event-ID', Buffer.from(raw[i + 1]!, 'latin1').toString('utf8')]);
  const since = wholeNumber(params, 'since', 0, errors);
  const resumed = sent.length === 0 ? undefined : wholeNumber(new URLSearchParams(sent), 'Last-Event-ID', 0, errors);
  if (Object.keys(errors).length > 0) throw new HttpProblem(400, 'The change feed parameters are not valid.', { errors });
  return resumed === undefined ? { since: since ?? 0, from: 'since' } : { since: resumed, from: 'Last-Event-ID' };
}

/** Where a change stream's starting point came from. */
type StartParameter = 'since' | 'Last-Event-ID';

function aheadOfCatalogue(since: number, version: number, parameter: StartParameter): HttpProblem {
  return new HttpProblem(
    409,
    `Version ${since} is ahead of this catalogue's version ${version}: the copy does not come from this catalogue (a restored backup, another database). Start again from since=0.`,
    { errors: { [parameter]: [`The catalogue's version is ${version}.`] } },
  );
}
