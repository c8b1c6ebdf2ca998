/**
 * `npm run outbox -- instances|alerts`: what the running processes report, read from the store (their heartbeats,
 * the alert rules' states), as a table or as JSON.
 */
import { createAlertService } from '../alerts/alert.service.js';
import { systemClock } from '../clock.js';
import { createInstanceService } from '../instances/instance.service.js';
import { formatAlerts } from './alerts-table.js';
import type { Command } from './command-context.js';
import { formatInstances } from './instances-table.js';

export const STATUS_USAGE = `  instances [--json]                    the running processes from their heartbeats: roles, host, pid,
                                        version, age, last heartbeat, load; stale ones marked
  alerts [--json]                       every alert rule's state (ok, pending, firing, resolved, inactive),
                                        since when, and its value against its threshold`;

export const STATUS_COMMANDS: Record<string, Command> = {
  async instances({ store, values, out }) {
    const instances = await createInstanceService({ store, clock: systemClock }).listInstances();
    if (values.json) out(JSON.stringify(instances, null, 2));
    else for (const line of formatInstances(instances)) out(line);
  },
  async alerts({ store, config, values, out }) {
    const alerts = await createAlertService({ store, clock: systemClock, settings: config.alerts }).listAlerts();
    if (values.json) out(JSON.stringify(alerts, null, 2));
    else for (const line of formatAlerts(alerts)) out(line);
  },
};
