import { useState, type FormEvent } from 'react';
import { APPLICATION_EVENT_TYPES, type ApplicationEventType, type CreateWebhookBody, type WebhookEndpoint } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ErrorMessage } from '../../../components/ui/error-message';
import { useApplications } from '../api/webhooks-api';

interface EndpointFormProps {
  token: string;
  /** The endpoint to edit; absent: a new one. */
  endpoint?: WebhookEndpoint;
  busy: boolean;
  error: string | null;
  onSubmit: (body: CreateWebhookBody) => void;
  onCancel: () => void;
}

/** Create or edit an endpoint: URL, description, the events it wants (none ticked: all), one application or all. */
export function EndpointForm({ token, endpoint, busy, error, onSubmit, onCancel }: EndpointFormProps) {
  const applications = useApplications(token);
  const [url, setUrl] = useState(endpoint?.url ?? '');
  const [description, setDescription] = useState(endpoint?.description ?? '');
  const [eventTypes, setEventTypes] = useState<ApplicationEventType[]>(endpoint?.eventTypes ?? []);
  const [applicationId, setApplicationId] = useState<string>(endpoint?.application ? String(endpoint.application.id) : '');
  const [enabled, setEnabled] = useState(endpoint?.enabled ?? true);

  function submit(event: FormEvent) {
    event.preventDefault();
    onSubmit({
      url: url.trim(),
      description: description.trim(),
      eventTypes,
      applicationId: applicationId === '' ? null : Number(applicationId),
      enabled,
    });
  }

  function toggle(type: ApplicationEventType, on: boolean) {
    setEventTypes((current) => (on ? [...current, type] : current.filter((t) => t !== type)));
  }

  return (
    <form className="webhooks__form" onSubmit={submit} aria-label={endpoint ? 'Edit endpoint' : 'New endpoint'}>
      <label className="panel__field">
        <span>URL</span>
        <input
          type="url"
          required
          value={url}
          onChange={(e) => setUrl(e.target.value)}
          placeholder="https://app.example.com/outbox-events"
          data-autofocus
        />
      </label>
      <label className="panel__field">
        <span>Description</span>
        <input type="text" value={description} onChange={(e) => setDescription(e.target.value)} maxLength={500} />
      </label>
      <label className="panel__field">
        <span>Application</span>
        <select value={applicationId} onChange={(e) => setApplicationId(e.target.value)}>
          <option value="">All applications</option>
          {(applications.data ?? []).map((application) => (
            <option key={application.id} value={application.id}>
              {application.name}
            </option>
          ))}
        </select>
      </label>
      <fieldset className="webhooks__events">
        <legend>Events (none ticked: every event)</legend>
        {APPLICATION_EVENT_TYPES.map((type) => (
          <label key={type} className="webhooks__event">
            <input type="checkbox" checked={eventTypes.includes(type)} onChange={(e) => toggle(type, e.target.checked)} />
            <span>{type}</span>
          </label>
        ))}
      </fieldset>
      <label className="webhooks__check">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
        <span>Enabled</span>
      </label>
      <ErrorMessage text={error} />
      <p className="modal__actions">
        <Button variant="ghost" onClick={onCancel}>
          Cancel
        </Button>
        <Button type="submit" variant="primary" disabled={busy}>
          {endpoint ? 'Save' : 'Create endpoint'}
        </Button>
      </p>
    </form>
  );
}
