import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { BulkRequest, BulkResponse, ErrorBody } from '@outbox/contract';
import type { AuthService } from '../auth/auth.service.js';
import { badRequest } from '../errors.js';
import type { MailService } from '../mail/mail.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

/** `POST /api/v1/mail/bulk`: the work is mail/bulk-actions.ts. */
export const bulkRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; mails: MailService }> = async (app, { auth, mails }) => {
  app.addHook('onRequest', requireOperator(auth));

  app.post(
    '/api/v1/mail/bulk',
    {
      schema: {
        tags: ['mail'],
        summary:
          'Dequeue, delete or requeue many mails: by ids (up to 1,000) or by the list filter with expectedCount (409 count_changed when it now matches more than expectedCount × 1.1 + 10); dryRun answers what would happen',
        body: BulkRequest,
        response: { 200: BulkResponse, ...errors },
      },
    },
    async (request) => {
      const { action, ids, filter, expectedCount, dryRun } = request.body;
      const actor = `operator:${request.operator?.username ?? 'unknown'}`;
      if (ids !== undefined && filter !== undefined) throw badRequest('invalid_request', 'body.ids and body.filter cannot both be given.');
      if (ids !== undefined) {
        if (expectedCount !== undefined)
          throw badRequest('invalid_request', 'body.expectedCount goes with body.filter, not with body.ids.');
        return { data: [await mails.bulkAction({ action, ids, dryRun }, actor)] };
      }
      if (filter === undefined) throw badRequest('invalid_request', 'body.ids or body.filter is required.');
      if (expectedCount === undefined) throw badRequest('invalid_request', 'body.expectedCount is required with body.filter.');
      return { data: [await mails.bulkAction({ action, filter, expectedCount, dryRun }, actor)] };
    },
  );
};
