/**
 * The `Idempotency-Key` rule of `POST /v1/scrapes` under concurrency, against the real stack: two
 * requests with the same key and different bodies sent at once make one job, and the one request
 * told it has that job (`202`/`200`) is the one whose body the job was started with; the other is
 * refused (`422 idempotency-key-reused`). Never is a request answered with a job made from another
 * body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { startApiStack, type ApiStack } from '../helpers/api.js';
import { FAST_POLICY } from '../helpers/stack.js';

let api: ApiStack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  api = await startApiStack({ profile: { concurrency: 16, minRunMs: 200 } });
});

afterAll(async () => {
  await api?.stop();
  await pages?.close();
});

describe('one Idempotency-Key, two bodies at once', () => {
  it('the request answered with the job is the one whose body started it; the other is 422', async () => {
    const url = `${pages.pageUrl('herald-sun-1')}?t=race`;
    const pairs = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const key = `race-${i}`;
        const send = (who: string) =>
          api
            .call('acme', 'POST', '/v1/scrapes', {
              json: { url, policy: FAST_POLICY, row: { who } },
              headers: { 'idempotency-key': key },
            })
            .then((r) => ({ who, status: r.status }));
        return { key, answers: await Promise.all([send('a'), send('b')]) };
      }),
    );
    for (const { key, answers } of pairs) {
      const row = await api.stack.store.jobs.get(`scrape:acme:${key}`);
      const started = (JSON.parse(row!.input || '{}') as { who?: string }).who;
      const told = answers.filter((a) => a.status === 202 || a.status === 200).map((a) => a.who);
      expect({ key, told, refused: answers.filter((a) => a.status === 422).length }).toEqual({
        key,
        told: [started],
        refused: 1,
      });
    }
  });

  it('a key whose start is refused is free again: the refused body does not hold it', async () => {
    const url = `${pages.pageUrl('herald-sun-1')}?t=released`;
    // The key's job was started elsewhere (the typed client) for this URL, with no API record.
    await api.client.startScrape({ account: 'acme', key: 'released-1', url, policy: FAST_POLICY });
    const other = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url: `${url}-other`, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'released-1' },
    });
    expect(other.status).toBe(422);
    const same = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url, policy: FAST_POLICY },
      headers: { 'idempotency-key': 'released-1' },
    });
    expect([200, 202]).toContain(same.status);
    expect(await same.json()).toMatchObject({ job_id: 'scrape:acme:released-1' });
  });
});
