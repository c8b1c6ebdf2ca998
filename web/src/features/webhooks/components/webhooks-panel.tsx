import './webhooks.css';
import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { CreateWebhookBody, WebhookEndpoint, WebhookEndpointWithSecret } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { PanelTable, type PanelColumn } from '../../../components/ui/panel-table';
import { RowConfirm } from '../../../components/ui/row-confirm';
import { TruncatedText } from '../../../components/ui/truncated-text';
import { PanelNotice } from '../../../components/ui/panel-notice';
import { PanelAddToolbar } from '../../../components/ui/panel-toolbar';
import { errorText } from '../../../lib/api-client';
import {
  createEndpoint,
  deleteEndpoint,
  rotateSecret,
  sendTestEvent,
  updateEndpoint,
  useEndpoints,
  webhookKeys,
} from '../api/webhooks-api';
import { DeliveriesView } from './deliveries-view';
import { EndpointForm } from './endpoint-form';
import { SecretReveal } from './secret-reveal';
import { applicationText, eventsText, stateText, successText } from './webhook-text';

type View =
  { kind: 'list' } | { kind: 'create' } | { kind: 'edit'; endpoint: WebhookEndpoint } | { kind: 'deliveries'; endpoint: WebhookEndpoint };

interface WebhooksPanelProps {
  token: string;
  onClose: () => void;
}

/**
 * The Webhooks panel (docs/console.md §10.17): the endpoints with their state and success rate over 24 hours;
 * create (the secret shown once), edit, disable, enable, rotate the secret, send a test event, delete; and each
 * endpoint's delivery log with replay.
 */
export function WebhooksPanel({ token, onClose }: WebhooksPanelProps) {
  const queryClient = useQueryClient();
  const endpoints = useEndpoints(token);
  const [view, setView] = useState<View>({ kind: 'list' });
  const [revealed, setRevealed] = useState<WebhookEndpointWithSecret | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [confirmDelete, setConfirmDelete] = useState<number | null>(null);

  const refresh = () => void queryClient.invalidateQueries({ queryKey: webhookKeys.all });
  const failed = (fallback: string) => (error: unknown) => setNotice(errorText(error, fallback));

  const save = useMutation({
    mutationFn: (input: { id?: number; body: CreateWebhookBody }) =>
      input.id === undefined ? createEndpoint(token, input.body) : updateEndpoint(token, input.id, input.body),
    onSuccess: (endpoint) => {
      if ('secret' in endpoint) setRevealed(endpoint as WebhookEndpointWithSecret);
      setNotice(null);
      setView({ kind: 'list' });
      refresh();
    },
  });
  const toggleEnabled = useMutation({
    mutationFn: (endpoint: WebhookEndpoint) => updateEndpoint(token, endpoint.id, { enabled: !endpoint.enabled }),
    onSuccess: (endpoint) => {
      setNotice(`${endpoint.url} ${endpoint.enabled ? 'enabled' : 'disabled'}.`);
      refresh();
    },
    onError: failed('The endpoint could not be changed; try again.'),
  });
  const rotate = useMutation({
    mutationFn: (endpoint: WebhookEndpoint) => rotateSecret(token, endpoint.id),
    onSuccess: (endpoint) => {
      setRevealed(endpoint);
      setNotice('New secret made; the old one keeps signing beside it for 24 hours.');
      refresh();
    },
    onError: failed('The secret could not be rotated; try again.'),
  });
  const test = useMutation({
    mutationFn: (endpoint: WebhookEndpoint) => sendTestEvent(token, endpoint.id),
    onSuccess: (result) => {
      setNotice(`Test event ${result.eventId} queued; its delivery shows in the endpoint's log.`);
      refresh();
    },
    onError: failed('The test event could not be sent; try again.'),
  });
  const remove = useMutation({
    mutationFn: (endpoint: WebhookEndpoint) => deleteEndpoint(token, endpoint.id),
    onSuccess: (_, endpoint) => {
      setConfirmDelete(null);
      setNotice(`${endpoint.url} deleted.`);
      refresh();
    },
    onError: failed('The endpoint could not be deleted; try again.'),
  });

  const columns: PanelColumn<WebhookEndpoint>[] = [
    {
      id: 'endpoint',
      header: 'Endpoint',
      className: 'webhooks__endpoint',
      cell: (endpoint) => (
        <>
          <TruncatedText text={endpoint.url} />
          {endpoint.description ? <TruncatedText className="muted" text={endpoint.description} /> : null}
        </>
      ),
    },
    { id: 'events', header: 'Events', cell: (endpoint) => <TruncatedText text={eventsText(endpoint)} /> },
    { id: 'application', header: 'Application', cell: applicationText },
    {
      id: 'state',
      header: 'State',
      cell: (endpoint) => (
        <span className={endpoint.enabled ? (endpoint.failingSince ? 'webhooks__failing' : '') : 'muted'}>{stateText(endpoint)}</span>
      ),
    },
    { id: 'success', header: 'Success (24 h)', cell: successText },
    {
      id: 'actions',
      header: 'Actions',
      isHeaderHidden: true,
      // The flex box inside the cell: a cell that is itself a flex box loses its row's height and border.
      cell: (endpoint) => <span className="webhooks__actions">{actionsOf(endpoint)}</span>,
    },
  ];

  /** A row's buttons, or the question Delete asks. */
  function actionsOf(endpoint: WebhookEndpoint) {
    return confirmDelete === endpoint.id ? (
      <RowConfirm
        question={'Delete this endpoint?'}
        action="Delete"
        isBusy={remove.isPending}
        onConfirm={() => remove.mutate(endpoint)}
        onKeep={() => setConfirmDelete(null)}
      />
    ) : (
      <>
        <Button
          size="small"
          variant="ghost"
          aria-label={`Deliveries of ${endpoint.url}`}
          onClick={() => setView({ kind: 'deliveries', endpoint })}
        >
          Deliveries
        </Button>
        <Button size="small" variant="ghost" aria-label={`Edit ${endpoint.url}`} onClick={() => setView({ kind: 'edit', endpoint })}>
          Edit
        </Button>
        <Button
          size="small"
          variant="ghost"
          aria-label={`${endpoint.enabled ? 'Disable' : 'Enable'} ${endpoint.url}`}
          disabled={toggleEnabled.isPending}
          onClick={() => toggleEnabled.mutate(endpoint)}
        >
          {endpoint.enabled ? 'Disable' : 'Enable'}
        </Button>
        <Button
          size="small"
          variant="ghost"
          aria-label={`Rotate secret of ${endpoint.url}`}
          disabled={rotate.isPending}
          onClick={() => rotate.mutate(endpoint)}
        >
          Rotate secret
        </Button>
        <Button
          size="small"
          variant="ghost"
          aria-label={`Send test to ${endpoint.url}`}
          disabled={test.isPending || !endpoint.enabled}
          onClick={() => test.mutate(endpoint)}
        >
          Send test
        </Button>
        <Button size="small" variant="ghost" aria-label={`Delete ${endpoint.url}`} onClick={() => setConfirmDelete(endpoint.id)}>
          Delete
        </Button>
      </>
    );
  }

  const list = endpoints.data ?? [];
  return (
    <ModalDialog title="Webhooks" onClose={onClose} placement="side" className="webhooks">
      {revealed ? <SecretReveal url={revealed.url} secret={revealed.secret} onDismiss={() => setRevealed(null)} /> : null}
      {view.kind === 'create' || view.kind === 'edit' ? (
        <EndpointForm
          key={view.kind === 'edit' ? view.endpoint.id : 'new'}
          token={token}
          endpoint={view.kind === 'edit' ? view.endpoint : undefined}
          busy={save.isPending}
          error={save.isError ? errorText(save.error, 'The endpoint could not be saved; try again.') : null}
          onSubmit={(body) => save.mutate(view.kind === 'edit' ? { id: view.endpoint.id, body } : { body })}
          onCancel={() => {
            save.reset();
            setView({ kind: 'list' });
          }}
        />
      ) : view.kind === 'deliveries' ? (
        <DeliveriesView token={token} endpoint={view.endpoint} onBack={() => setView({ kind: 'list' })} />
      ) : (
        <>
          <PanelAddToolbar addText="Add endpoint" onAdd={() => setView({ kind: 'create' })} onClose={onClose} />
          <PanelNotice text={notice} />
          <PanelTable
            label="Webhook endpoints"
            columns={columns}
            rows={list}
            rowKey={(endpoint) => endpoint.id}
            load={endpoints}
            emptyText="No endpoints yet. Add one to tell your applications what happens to their mail."
            errorText="The endpoints could not be loaded."
          />
        </>
      )}
    </ModalDialog>
  );
}
