/**
 * The claims a dispatcher holds: each fan-out and each claim of due deliveries leases its deliveries under an
 * owner of its own (`<instance>:<n>`), counted here until each of its deliveries is recorded or left, so that a
 * graceful stop gives back exactly the leases still held instead of letting them run out.
 */
export interface LeaseOwners {
  /** A new owner for a claim about to be made. */
  next(): string;
  /** The claim of `owner` holds `count` more deliveries. */
  hold(owner: string, count: number): void;
  /** One delivery of `owner` is recorded or left. */
  letGo(owner: string): void;
  /** The owners still holding deliveries. */
  held(): string[];
}

export function createLeaseOwners(instanceId: string): LeaseOwners {
  const owners = new Map<string, number>();
  let counter = 0;
  return {
    next() {
      counter += 1;
      return `${instanceId}:${counter}`;
    },
    hold(owner, count) {
      if (count > 0) owners.set(owner, (owners.get(owner) ?? 0) + count);
    },
    letGo(owner) {
      const left = (owners.get(owner) ?? 1) - 1;
      if (left <= 0) owners.delete(owner);
      else owners.set(owner, left);
    },
    held: () => [...owners.keys()],
  };
}
