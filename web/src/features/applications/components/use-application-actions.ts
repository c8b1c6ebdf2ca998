import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { Application, ApplicationWithKey, Lane } from '@outbox/contract';
import { errorText } from '../../../lib/api-client';
import {
  applicationKeys,
  createApplication,
  renameApplication,
  revokeApplication,
  rotateApplicationKey,
  updateApplication,
} from '../api/applications-api';
import { contentText } from './application-text';

interface ApplicationActionsOptions {
  /** What the panel says: that a change went through, or why a row's change did not. */
  onNotice: (notice: string) => void;
  /** A key was made (create or rotate): the panel shows it once. */
  onKey: (application: ApplicationWithKey) => void;
  /** The new application was made: its form closes. */
  onCreated: () => void;
  /** A row's change went through: the row's question or field closes. */
  onRowDone: () => void;
}

/**
 * Every change the Applications panel makes, each refreshing the list when it went through: create, rename,
 * revoke, the lane and the content retention, and a key's rotation.
 */
export function useApplicationActions(token: string, { onNotice, onKey, onCreated, onRowDone }: ApplicationActionsOptions) {
  const queryClient = useQueryClient();
  const refresh = () => void queryClient.invalidateQueries({ queryKey: applicationKeys.all });
  const failed = (fallback: string) => (error: unknown) => onNotice(errorText(error, fallback));
  const rowDone = (notice: string) => {
    onRowDone();
    onNotice(notice);
    refresh();
  };

  const create = useMutation({
    mutationFn: (input: { name: string; lane: Lane }) => createApplication(token, input.name, input.lane),
    onSuccess: (application) => {
      onKey(application);
      onCreated();
      onNotice(`Application ${application.name} created.`);
      refresh();
    },
  });
  const rename = useMutation({
    mutationFn: (input: { application: Application; name: string }) => renameApplication(token, input.application.id, input.name),
    onSuccess: (application, input) => {
      rowDone(`${input.application.name} renamed to ${application.name}.`);
    },
    onError: failed('The application could not be renamed; try again.'),
  });
  const revoke = useMutation({
    mutationFn: (application: Application) => revokeApplication(token, application.id),
    onSuccess: (application) => {
      rowDone(`${application.name} revoked: its key is refused from now on.`);
    },
    onError: failed('The application could not be revoked; try again.'),
  });
  const update = useMutation({
    mutationFn: (input: { application: Application; changes: { lane?: Lane; contentRetentionDays?: number | null } }) =>
      updateApplication(token, input.application.id, input.changes),
    onSuccess: (application, input) => {
      rowDone(
        input.changes.lane !== undefined
          ? `${application.name} now sends in the ${application.lane} lane.`
          : `${application.name} keeps content: ${contentText(application.contentRetentionDays).toLowerCase()}.`,
      );
    },
    onError: failed('The application could not be changed; try again.'),
  });
  const rotate = useMutation({
    mutationFn: (input: { application: Application; graceSeconds: number }) =>
      rotateApplicationKey(token, input.application.id, input.graceSeconds),
    onSuccess: (application) => {
      onKey(application);
      rowDone(`New key made for ${application.name}.`);
    },
    onError: failed('The key could not be rotated; try again.'),
  });
  return { create, rename, revoke, update, rotate };
}

export type ApplicationActions = ReturnType<typeof useApplicationActions>;
