/**
 * A loop's sleep that something else can cut short: the delivery worker and the webhook dispatcher sleep until
 * their next poll or due time, and a change (a new mail, an event, a stop) wakes them at once. A wake that comes
 * while the loop is awake (busy claiming, say) is kept, so the next sleep returns at once instead of missing it.
 */
export interface WakeableSleep {
  sleep(ms: number): Promise<void>;
  wake(): void;
}

export function createWakeableSleep(): WakeableSleep {
  let wakeUp: (() => void) | undefined;
  let wakeRequested = false;
  return {
    wake(): void {
      const resolve = wakeUp;
      wakeUp = undefined;
      if (resolve) resolve();
      else wakeRequested = true;
    },
    sleep(ms: number): Promise<void> {
      if (wakeRequested) {
        wakeRequested = false;
        return Promise.resolve();
      }
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          wakeUp = undefined;
          resolve();
        }, ms);
        wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
  };
}
