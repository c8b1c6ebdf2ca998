/**
 * `POST /api/v1/mail`: applications submit mail with an API key (`Authorization: Token {apiKey}`), one mail
 * as an object or a batch as an array. Operator tokens cannot submit, and API keys can do nothing else.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type AcceptedMail, DataOf, ErrorBody, MAX_BATCH, Mail, SubmitMailBatchRequest, SubmitMailRequest } from '@outbox/contract';
import { Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { ValueErrorType } from '@sinclair/typebox/errors';
import type { FastifyRequest } from 'fastify';
import type { ApiKeyPrincipal, AuthService } from '../auth/auth.service.js';
import { badRequest, unauthorized } from '../errors.js';
import { submissionProblems, type SubmissionService } from '../submission/submission.service.js';
import { closeIfBodyUnread, readAuthorizationToken } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };
const MAX_SUBMISSION_BYTES = 26 * 1024 * 1024;
const mailSchema = TypeCompiler.Compile(SubmitMailRequest);

type SubmissionRequest = FastifyRequest & { apiKey: ApiKeyPrincipal };

/** `/to/0/recipientMail` → `body.to[0].recipientMail`; `where` is `body` or `body[3]`. */
function fieldName(where: string, path: string): string {
  return `${where}${path
    .split('/')
    .filter(Boolean)
    .map((segment) => (/^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`))
    .join('')}`;
}

/** The first schema problem of one mail, naming its field, e.g. `body[3].to[0].recipientMail is required`. */
function schemaProblem(where: string, mail: unknown): string | undefined {
  if (mailSchema.Check(mail)) return undefined;
  const all = [...mailSchema.Errors(mail)];
  const first = all[0];
  if (!first) return `${where} is not a mail`;
  const field = fieldName(where, first.path);
  // A missing property also fails its type check, which is reported first; "is required" says it better.
  if (all.some((e) => e.path === first.path && e.type === ValueErrorType.ObjectRequiredProperty)) return `${field} is required`;
  if (first.type === ValueErrorType.ObjectAdditionalProperties) return `${field} is not an accepted field`;
  // A choice of literals (a lane): name them rather than "Expected union value".
  const choices = (first.schema as { anyOf?: Array<{ const?: unknown }> }).anyOf;
  if (first.type === ValueErrorType.Union && choices?.every((choice) => typeof choice.const === 'string')) {
    return `${field} must be one of ${choices.map((choice) => String(choice.const)).join(', ')}`;
  }
  return `${field} ${first.message.charAt(0).toLowerCase()}${first.message.slice(1)}`;
}

/**
 * Checks the body mail by mail, schema first and then what a schema cannot say (addresses, CR/LF, headers),
 * so the answer names the first bad mail of a batch whatever kind of problem it has.
 */
function validateBody(body: unknown): SubmitMailRequest[] {
  const isBatch = Array.isArray(body);
  if (!isBatch && (typeof body !== 'object' || body === null)) {
    throw badRequest('invalid_request', 'body must be a mail (an object) or a batch (an array of mails).');
  }
  const mails: unknown[] = isBatch ? body : [body];
  if (isBatch && mails.length === 0) throw badRequest('invalid_request', 'body is an empty batch; send at least one mail.');
  if (mails.length > MAX_BATCH) {
    throw badRequest('invalid_request', `body holds ${mails.length} mails; a batch takes at most ${MAX_BATCH}.`);
  }
  mails.forEach((mail, i) => {
    const where = isBatch ? `body[${i}]` : 'body';
    const problem = schemaProblem(where, mail);
    if (problem) throw badRequest('invalid_request', `${problem}.`);
    const problems = submissionProblems(mail as SubmitMailRequest);
    if (problems.length > 0) throw badRequest('invalid_request', `${problems.map((p) => `${where}.${p}`).join('; ')}.`);
  });
  return mails as SubmitMailRequest[];
}

/**
 * RFC 7240 `Prefer: return=minimal`: the 202 names each mail by id and status alone (AcceptedMail). A batch's
 * full answer repeats every mail's fields back to the submitter, which knows them; writing them costs the
 * server more than a tenth of the batch (docs/benchmarks.md).
 */
function prefersMinimalAnswer(request: FastifyRequest): boolean {
  const prefer = request.headers.prefer;
  return (Array.isArray(prefer) ? prefer : [prefer ?? '']).some((value) =>
    value.split(',').some((preference) => preference.split(';')[0]!.trim().toLowerCase() === 'return=minimal'),
  );
}

export const submissionRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; submissions: SubmissionService }> = async (
  app,
  { auth, submissions },
) => {
  app.post(
    '/api/v1/mail',
    {
      bodyLimit: MAX_SUBMISSION_BYTES,
      // The schema below documents the body (OpenAPI); the handler validates it (validateBody). Fastify's
      // ajv would strip unknown properties instead of refusing them (removeAdditional), and a union's errors
      // would not name the field.
      validatorCompiler: () => (data) => ({ value: data }),
      schema: {
        tags: ['submission'],
        summary: `Submit a mail (object) or a batch (array, up to ${MAX_BATCH}) with an API key; 202 with the queued mails`,
        description:
          'With `Prefer: return=minimal` the 202 holds `{data:[{id, status, suppressedRecipients?}]}` per mail instead of the whole mail, and says `Preference-Applied: return=minimal`.',
        headers: Type.Object({ prefer: Type.Optional(Type.String({ description: '`return=minimal`: the short 202 (AcceptedMail)' })) }),
        body: Type.Union([SubmitMailRequest, SubmitMailBatchRequest]),
        response: { 202: DataOf(Mail), ...errors },
      },
      // onRequest, before the body is read: without a valid key nobody gets the server to take in 26 MB.
      onRequest: async (request, reply) => {
        const key = readAuthorizationToken(request);
        if (!key) closeIfBodyUnread(request, reply);
        if (!key)
          throw unauthorized(
            'missing_api_key',
            'Send Authorization: Token {apiKey}; create one with `npm run outbox -- apikey create NAME`.',
          );
        const principal = await auth.findApiKeyPrincipal(key);
        if (!principal) closeIfBodyUnread(request, reply);
        if (!principal) throw unauthorized('invalid_api_key', 'The API key is unknown or revoked. Operator tokens cannot submit mail.');
        (request as SubmissionRequest).apiKey = principal;
      },
    },
    async (request, reply) => {
      const body = request.body as unknown;
      const mails = validateBody(body);
      const principal = (request as SubmissionRequest).apiKey;
      const stored = await submissions.submitJson(principal, mails, Array.isArray(body));
      if (prefersMinimalAnswer(request)) {
        const data: AcceptedMail[] = stored.map(({ id, status, suppressedRecipients }) =>
          suppressedRecipients ? { id, status, suppressedRecipients } : { id, status },
        );
        // Written by JSON.stringify, not by the route's Mail schema (which the type provider holds `send` to): a
        // union in the schema would make the default answer test each mail against both shapes.
        return reply
          .status(202)
          .header('preference-applied', 'return=minimal')
          .serializer(JSON.stringify)
          .send({ data } as never);
      }
      return reply.status(202).send({ data: stored });
    },
  );
};
