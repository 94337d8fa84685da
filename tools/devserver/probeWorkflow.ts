/**
 * Workflow code for {@link probeTemporal} (`tools/devserver/probe.ts`): a tiny workflow that exercises the
 * server features the scrape workflows rely on — an Update with a validator, typed search attribute
 * upserts, current details (user metadata) and a signal. Deterministic; bundled by the probe's worker.
 * It lives here (not in `src/workflows/`) because it only checks a Temporal server, it is not product code.
 */
import {
  condition,
  defineSignal,
  defineUpdate,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { ScrapeState } from '../../src/workflows/searchAttributes.js';

/** Update: returns `echo:<arg>`; the validator rejects an empty string. */
export const probeEchoUpdate = defineUpdate<string, [string]>('probeEcho');
/** Signal: lets the probe workflow complete. */
export const probeFinishSignal = defineSignal('probeFinish');

/** The value the probe workflow upserts into `ScrapeState`. */
export const PROBE_STATE = 'probe';

/** Upserts `ScrapeState=probe`, answers `probeEcho` Updates, ends on `probeFinish`; returns the Update count. */
export async function devServerProbeWorkflow(): Promise<number> {
  let finished = false;
  let updates = 0;
  // Before the handlers: an Update that arrived with the first workflow task runs inside setHandler.
  setCurrentDetails('probe running');
  upsertSearchAttributes([{ key: ScrapeState, value: PROBE_STATE }]);
  setHandler(
    probeEchoUpdate,
    (s: string) => {
      updates++;
      setCurrentDetails(`echoed ${s}`);
      return `echo:${s}`;
    },
    {
      validator: (s: string) => {
        if (!s) throw new Error('empty probe argument');
      },
    },
  );
  setHandler(probeFinishSignal, () => {
    finished = true;
  });
  await condition(() => finished);
  return updates;
}
