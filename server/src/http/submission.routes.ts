/**
 * `POST /api/v1/mail`: applications submit mail with an API key (`Authorization: Token {apiKey}`), one mail
 * as an object or a batch as an array. Operator tokens cannot submit, and API keys can do nothing else.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DataOf, ErrorBody, Mail, SubmitMailBatchRequest, SubmitMailRequest } from '@outbox/contract';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { ApiKeyPrincipal, AuthService } from '../auth/auth.service.js';
import { badRequest, unauthorized } from '../errors.js';
import type { SubmissionService } from '../mail/submission.service.js';
import { readAuthorizationToken } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };
const MAX_SUBMISSION_BYTES = 26 * 1024 * 1024;

/** Names the first field that breaks the schema, e.g. `body[3].to[0].recipientMail is required`. */
function describeFirstProblem(schema: typeof SubmitMailRequest | typeof SubmitMailBatchRequest, body: unknown): string {
  const first = Value.Errors(schema, body).First();
  if (!first) return 'body is not a mail or a list of mails';
  const path = first.path
    .split('/')
    .filter(Boolean)
    .map((segment) => (/^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`))
    .join('');
  return `body${path} ${first.message.toLowerCase()}`;
}

export const submissionRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; submissions: SubmissionService }> = async (app, { auth, submissions }) => {
  app.post(
    '/api/v1/mail',
    {
      bodyLimit: MAX_SUBMISSION_BYTES,
      // The body is an object or an array; a union's own errors would not name the field, so the handler
      // validates against the one schema that applies and says exactly what is wrong.
      attachValidation: true,
      schema: {
        tags: ['submission'],
        summary: 'Submit a mail (object) or a batch (array, up to 500) with an API key; 202 with the queued mails',
        body: Type.Union([SubmitMailRequest, SubmitMailBatchRequest]),
        response: { 202: DataOf(Mail), ...errors },
      },
      preHandler: async (request) => {
        const key = readAuthorizationToken(request);
        if (!key) throw unauthorized('missing_api_key', 'Send Authorization: Token {apiKey}; create one with `npm run outbox -- apikey create NAME`.');
        const principal = await auth.findApiKeyPrincipal(key);
        if (!principal) throw unauthorized('invalid_api_key', 'The API key is unknown or revoked. Operator tokens cannot submit mail.');
        (request as typeof request & { apiKey: ApiKeyPrincipal }).apiKey = principal;
      },
    },
    async (request, reply) => {
      const body = request.body as unknown;
      const isBatch = Array.isArray(body);
      const schema = isBatch ? SubmitMailBatchRequest : SubmitMailRequest;
      if (request.validationError || !Value.Check(schema, body)) {
        throw badRequest('invalid_request', `${describeFirstProblem(schema, body)}.`);
      }
      const principal = (request as typeof request & { apiKey: ApiKeyPrincipal }).apiKey;
      const mails = await submissions.submitJson(principal, isBatch ? body : [body], isBatch);
      return reply.status(202).send({ data: mails });
    },
  );
};
