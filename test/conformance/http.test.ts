/**
 * The conformance matrix (`./matrix.ts`) on the declarative `http` kind against the "runs and
 * items" API of `test/fixtures/providers/http/` (see its CONTRACT.md). The entry declares its list
 * as the contract guarantees it: the list may show active runs only (`active-only` is a behaviour
 * the contract allows), so it is declared to show queued and running runs, and absence of a
 * finished run is never concluded from it. Items are read by `links.next`: the API may serve an
 * empty page before the last one, which only its links (not an offset) tell from the end.
 */
import { startRunsFixture } from '../fixtures/providers/http/server.js';
import { defineConformanceMatrix } from './matrix.js';

await defineConformanceMatrix({
  label: 'http (runs and items API)',
  kind: 'http',
  fixture: () => startRunsFixture({ items: 5 }),
  entry: (fx) => ({
    baseUrl: fx.url,
    auth: { in: 'query', name: 'api_key' },
    submit: {
      path: '/v3/runs',
      body: { target: { url: '{{url}}' }, reference: '{{clientRef}}' },
      taskIdPath: '/data/id',
      statusPath: '/data/state',
    },
    status: {
      path: '/v3/runs/{{taskId}}',
      statusPath: '/data/state',
      map: { pending: 'queued', running: 'running', done: 'completed', error: 'failed', aborted: 'cancelled' },
      errorCodePath: '/data/failure/reason',
      errorMessagePath: '/data/failure/detail',
      progress: { documents: '/data/items_total' },
    },
    result: {
      request: { path: '/v3/runs/{{taskId}}/items' },
      documentsPath: '/items',
      fields: { url: '/link', title: '/heading', text: '/content', error: '/problem' },
      pagination: { style: 'next', nextPath: '/links/next' },
    },
    // The list of a deployment without it answers `404 NOT_FOUND` (route not found): not offered.
    errors: {
      terminalCodes: ['EMPTY_DATASET'],
      expiredCodes: ['RUN_EXPIRED'],
      concurrencyCodes: ['TOO_MANY_RUNS'],
      unsupportedCodes: ['NOT_FOUND'],
    },
    cancel: {
      method: 'POST',
      path: '/v3/runs/{{taskId}}/abort',
      statusPath: '/data/state',
      finalStatusPath: '/error/state',
    },
    list: {
      path: '/v3/runs',
      query: { reference: '{{clientRef}}' },
      itemsPath: '/runs',
      matchPath: '/reference',
      taskIdPath: '/id',
      statusPath: '/state',
      shows: ['queued', 'running'],
    },
    results: { pageSize: 2 },
  }),
  // The run's record counts every item, the one with a `problem` too.
  documentsCountErrors: true,
});
