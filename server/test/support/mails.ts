/** Puts mails in a given status straight into the store, as the pipeline would have left them. */
import crypto from 'node:crypto';
import { MailStatus, type MailStatusCode } from '@outbox/contract';
import { claimTransition } from '../../src/delivery/lease-transitions.js';
import { applyTransitions } from '../../src/mail/write/apply.js';
import { insertMails } from '../../src/mail/write/create.js';
import type { Store } from '../../src/store/connection.js';

export interface SeedMail {
  status?: number;
  subject?: string;
  fromName?: string;
  fromMail?: string;
  to?: Array<{ name: string; address: string }>;
  receivedAt?: number;
  providerSentAt?: number;
}

export async function seedMails(store: Store, mails: SeedMail[], now = Date.parse('2026-11-23T09:00:00Z')): Promise<number[]> {
  return store.db.transaction().execute(async (trx) => {
    const rows = mails.map((m, i) => {
      const to = m.to ?? [{ name: 'Rita Recipient', address: `rita${i}@example.com` }];
      const subject = m.subject ?? `Subject ${i}`;
      const fromName = m.fromName ?? 'Sam Sender';
      const fromMail = m.fromMail ?? 'sam@example.com';
      const receivedAt = m.receivedAt ?? now + i * 1000;
      return {
        row: {
          message_id: `<${crypto.randomUUID()}@test>`,
          from_name: fromName,
          from_mail: fromMail,
          subject,
          received_at: receivedAt,
          last_update_at: receivedAt,
          provider_sent_at: m.providerSentAt ?? 0,
          // Far in the future: a worker, if one runs, leaves seeded Queued mails alone.
          next_attempt_at: now + 365 * 86_400_000,
          attempts: 0,
          provider_reply: null,
          api_key_id: null,
          idempotency_key: null,
        },
        recipients: to.map((r) => ({ kind: 'to', name: r.name, address: r.address })),
        // Counters as a submission would have moved them; seeded mails have no history. A Processing mail is a
        // Queued one under a lease (mail/leases.ts): created Queued, then claimed below.
        created: {
          to: (m.status === MailStatus.Processing ? MailStatus.Queued : (m.status ?? MailStatus.Queued)) as MailStatusCode,
          at: now,
          event: null,
        },
      };
    });
    const ids = await insertMails(trx, rows);
    // Claimed as it arrived: its last update is its receipt, as before the queue had its own table.
    const leased = rows.flatMap((row, i) => (mails[i]!.status === MailStatus.Processing ? [{ id: ids[i]!, at: row.row.received_at }] : []));
    if (leased.length > 0)
      await applyTransitions(
        trx,
        leased.map(({ id, at }) => claimTransition(id, at, { owner: 'seed', expiresAt: now + 365 * 86_400_000 })),
      );
    return ids;
  });
}
