/**
 * The drawer's sections of the stored message (its attachments and headers), and what stands in their place once
 * content retention removed it.
 */
import type { MailAttachment, MailDetail } from '@outbox/contract';
import { LocalTime } from '../../../components/ui/local-time';
import { DetailTable } from './mail-detail-table';

/**
 * Where the bodies, attachments and headers were, once content retention removed them: when, and what is kept.
 * Plain text in a labelled section, so a screen reader reads it where a sighted operator looks for the body.
 */
export function ContentRemoved({ at }: { at: string }) {
  return (
    <section aria-labelledby="d-content">
      <h3 id="d-content">Content</h3>
      <p>
        Content removed on <LocalTime iso={at} />.
      </p>
      <p className="muted">
        Content retention removed its message, bodies, attachments and headers; the sender, recipients, status, dates and event log are
        kept. It cannot be requeued or downloaded.
      </p>
    </section>
  );
}

const byteFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

/** 1,234 bytes; 12.5 KiB; 3.2 MiB: the decoded size of the file. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${byteFormat.format(bytes)} ${bytes === 1 ? 'byte' : 'bytes'}`;
  if (bytes < 1024 * 1024) return `${byteFormat.format(bytes / 1024)} KiB`;
  return `${byteFormat.format(bytes / (1024 * 1024))} MiB`;
}

/** The message's attachments by name, type and size; their bytes are in the .eml download. */
export function Attachments({ attachments }: { attachments: MailAttachment[] }) {
  return (
    <DetailTable columns={['Name', 'Type', 'Size']}>
      {attachments.map((attachment, index) => (
        <tr key={index}>
          <td className="detail-table__detail">
            {attachment.filename ?? <span className="muted">(no name)</span>}
            {attachment.disposition === 'inline' ? <span className="muted"> (inline)</span> : null}
          </td>
          <td className="mono">{attachment.contentType}</td>
          <td className="nowrap" title={`${attachment.size.toLocaleString('en-US')} bytes`}>
            {formatSize(attachment.size)}
          </td>
        </tr>
      ))}
    </DetailTable>
  );
}

export function Headers({ headers }: { headers: MailDetail['headers'] }) {
  return (
    <dl className="headers">
      {headers.map((header, index) => (
        <div key={index} className="headers__row">
          <dt>{header.name}</dt>
          <dd>{header.value}</dd>
        </div>
      ))}
    </dl>
  );
}
