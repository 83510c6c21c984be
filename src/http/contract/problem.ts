import { STATUS_CODES } from 'node:http';
import type { FastifyReply } from 'fastify';
import Type, { type Static } from 'typebox';
import type { FieldErrors } from '../../catalogue/product.js';

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'Always "about:blank": the status says what kind of problem it is.' }),
    title: Type.String({ description: "The status code's standard phrase." }),
    status: Type.Integer(),
    detail: Type.String({ description: 'What went wrong, for a person to read.' }),
    errors: Type.Optional(
      Type.Record(Type.String(), Type.Array(Type.String()), {
        description: 'On validation failures: each failing field or parameter with its messages.',
      }),
    ),
  },
  {
    $id: 'Problem',
    title: 'Problem (RFC 9457)',
    examples: [
      {
        type: 'about:blank',
        title: 'Bad Request',
        status: 400,
        detail: 'The product is not valid.',
        errors: { barcode: ['EAN-13 check digit is wrong: expected 1, got 7.'], price: ['This field is required.'] },
      },
    ],
  },
);

export type Problem = Static<typeof ProblemSchema>;

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/** An answer other than success, decided by the HTTP layer; the error handler sends it as it is. */
export class HttpProblem extends Error {
  readonly status: number;
  readonly errors: FieldErrors | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, detail: string, options: { errors?: FieldErrors; headers?: Record<string, string> } = {}) {
    super(detail);
    this.name = 'HttpProblem';
    this.status = status;
    this.errors = options.errors;
    this.headers = options.headers ?? {};
  }
}

export function problemBody(status: number, detail: string, errors?: FieldErrors): Problem {
  const body: Problem = { type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail };
  if (errors !== undefined) body.errors = errors;
  return body;
}

export function sendProblem(reply: FastifyReply, status: number, detail: string, errors?: FieldErrors): FastifyReply {
  return reply.code(status).type(PROBLEM_CONTENT_TYPE).send(problemBody(status, detail, errors));
}
