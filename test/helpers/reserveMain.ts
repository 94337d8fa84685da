/**
 * A worker's submits, as a separate process for the store tests (`store-slots.test.ts`): opens the
 * store at `argv[2]`, waits until `argv[3]` (epoch ms, so that two processes start together),
 * reserves a slot of key `argv[4]` (limit `argv[5]`) for every job ID of `argv[6…]` at once, and
 * prints the reservations' kinds as one JSON array on stdout. Two of these at the same time stand
 * for two workers on one SQLite file.
 */
import { openStore } from '../../src/store/index.js';

const [url, startAt, label, limit, ...ids] = process.argv.slice(2);
const store = await openStore(url!);
try {
  await new Promise((r) => setTimeout(r, Math.max(0, Number(startAt) - Date.now())));
  const out = await Promise.all(
    ids.map((id) =>
      store.slots.reserveSubmit(id, { label: label! }, { initial: Number(limit) }, false, undefined, {
        cost: { unit: 'credits', estimate: 1, failedFree: false },
        fair: {},
        provider: { account: label!, key: label! },
      }),
    ),
  );
  process.stdout.write(JSON.stringify(out.map((r) => r.kind)));
} finally {
  await store.close();
}
