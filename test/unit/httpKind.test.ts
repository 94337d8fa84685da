/**
 * The declarative `http` kind without Temporal: configuration errors that name the bad field, the
 * template language (typed placeholders, absent members left out, spreads, encoded path segments,
 * unknown names refused), JSON Pointers, the status map (any case, exact, default), docs/providers.md's
 * worked example (it must parse), and the Firecrawl kind's status words and documents.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import {
  firecrawlDocument,
  firecrawlEventStatus,
  firecrawlState,
  firecrawlWebhook,
} from '../../src/providers/firecrawl/index.js';
import { HttpAdapter, mapStatus, type HttpEntry } from '../../src/providers/http/index.js';
import { answerBody, isErrorAnswer, keptAnswer, keptFields } from '../../src/providers/http/calls.js';
import { ProviderHttp } from '../../src/providers/shared/http.js';
import { credentialConfigured, needsCredential } from '../../src/providers/kinds.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import {
  isJsonPointer,
  pick,
  renderJson,
  renderPath,
  renderUrl,
  unknownPlaceholders,
  valueOf,
} from '../../src/providers/http/template.js';
import { referenceAsHttp } from '../fixtures/providers/http/referenceContract.js';

const REPO = path.resolve(import.meta.dirname, '../..');

const minimal = {
  kind: 'http',
  baseUrl: 'https://api.example.com',
  credentials: {},
  submit: { path: '/jobs', body: { url: '{{url}}' }, taskIdPath: '/id' },
  status: { path: '/jobs/{{taskId}}', statusPath: '/state', map: { done: 'completed' } },
  result: { pagePath: '/page' },
};
const parse = (entry: Record<string, unknown>) => parseConfig({ providers: { x: entry } }, {}).providers.x!;

describe('http kind configuration', () => {
  it('a minimal entry parses with its defaults (bearer, POST, unrecognised default, 202/204 not ready)', () => {
    expect(parse(minimal)).toMatchObject({
      auth: { in: 'bearer' },
      submit: { method: 'POST', idempotent: false },
      status: { default: 'unrecognised', matchCase: 'any', notReadyStatusCodes: [202, 204] },
    });
  });

  it('refuses bad entries with an error naming the field', () => {
    // [entry, the field named, the reason]
    const bad: [Record<string, unknown>, string, RegExp][] = [
      [
        { ...minimal, submit: { ...minimal.submit, body: { u: '{{uri}}' } } },
        'providers.x.submit.body',
        /unknown placeholder \{\{uri\}\} \(allowed here: \{\{url\}\}/,
      ],
      [
        { ...minimal, status: { ...minimal.status, path: '/jobs/{{idempotencyKey}}' } },
        'providers.x.status.path',
        /\{\{idempotencyKey\}\} \(allowed here: \{\{taskId\}\}, \{\{url\}\}/,
      ],
      [
        { ...minimal, submit: { ...minimal.submit, taskIdPath: 'data.id' } },
        'providers.x.submit.taskIdPath',
        /JSON Pointer/,
      ],
      [
        { ...minimal, submit: { ...minimal.submit, idempotent: true } },
        'providers.x.submit.idempotent',
        /sends \{\{idempotencyKey\}\}/,
      ],
      [{ ...minimal, status: { ...minimal.status, map: {} } }, 'providers.x.status.map', /at least one word/],
      [
        { ...minimal, status: { ...minimal.status, map: { done: 'completed', DONE: 'failed' } } },
        'providers.x.status.map',
        /differ only in case/,
      ],
      [
        { ...minimal, status: { ...minimal.status, map: { done: 'finished' } } },
        'providers.x.status.map.done',
        /queued|running/,
      ],
      [{ ...minimal, result: { fields: {} } }, 'providers.x.result.pagePath', /pagePath \(one page\) or documentsPath/],
      [
        { ...minimal, result: { documentsPath: '/items', pagination: { style: 'next', nextPath: '/next' } } },
        'providers.x.result.pagination',
        /result\.request/,
      ],
      [
        { ...minimal, webhookScheme: { signed: true, taskIdPath: '/id' } },
        'providers.x.webhookScheme.signatureHeader',
        /needs signatureHeader/,
      ],
      [
        { ...minimal, webhook: { url: 'https://us.example.com/v1/webhooks/x', secretEnv: 'S' } },
        'providers.x.webhookScheme',
        /"webhook" is configured but "webhookScheme" is not/,
      ],
      [{ ...minimal, auth: { in: 'query' } }, 'providers.x.auth.name', /./],
      [{ ...minimal, sumbit: {} }, 'providers.x', /sumbit/],
      [
        { ...minimal, submit: { ...minimal.submit, method: 'GET' } },
        'providers.x.submit.body',
        /GET submit cannot have a body/,
      ],
      [
        { ...minimal, submit: { ...minimal.submit, bodyEncoding: 'form', body: { a: { b: 1 } } } },
        'providers.x.submit.body',
        /form body/,
      ],
      // Fields only of object variables; `statusAnswer` only in the result call.
      [
        { ...minimal, status: { ...minimal.status, query: { u: '{{url.host}}' } } },
        'providers.x.status.query',
        /unknown placeholder \{\{url\.host\}\}.*fields only of options, submitAnswer/,
      ],
      [
        { ...minimal, status: { ...minimal.status, path: '/jobs/{{statusAnswer.id}}' } },
        'providers.x.status.path',
        /unknown placeholder \{\{statusAnswer\.id\}\}/,
      ],
      [{ ...minimal, status: { ...minimal.status, path: undefined } }, 'providers.x.status.path', /"path".*or "url"/],
      [
        { ...minimal, status: { ...minimal.status, url: '{{submitAnswer.self}}' } },
        'providers.x.status.url',
        /not both/,
      ],
      [
        { ...minimal, status: { ...minimal.status, body: { job: '{{taskId}}' } } },
        'providers.x.status.body',
        /GET call cannot have a body/,
      ],
      [
        {
          ...minimal,
          cancel: { path: '/jobs/cancel', method: 'POST', bodyEncoding: 'form', body: { job: { id: '{{taskId}}' } } },
        },
        'providers.x.cancel.body',
        /form body/,
      ],
      [{ ...minimal, status: { ...minimal.status, missing: 'unrecognised' } }, 'providers.x.status.missing', /./],
      [
        { ...minimal, result: { pagePath: '/0', format: 'jsonl' } },
        'providers.x.result.format',
        /needs result\.request/,
      ],
      [
        { ...minimal, errors: { errorWhen: { path: 'status', equals: 'error' } } },
        'providers.x.errors.errorWhen.path',
        /JSON Pointer/,
      ],
      [
        { ...minimal, cancel: { path: '/c/{{taskId}}', completedMeans: 'cancelled' } },
        'providers.x.cancel.completedMeans',
        /./,
      ],
      [
        { ...minimal, list: { path: '/jobs', itemsPath: [], matchPath: '/id', taskIdPath: '/id' } },
        'providers.x.list.itemsPath',
        /./,
      ],
      // Only an entry whose calls send no credential may leave `credentials` out.
      [{ ...minimal, credentials: undefined }, 'providers.x.credentials', /credentials is required/],
    ];
    for (const [entry, field, why] of bad) {
      let message = '';
      try {
        parse(entry);
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message, JSON.stringify(entry)).toMatch(why);
      expect(message, JSON.stringify(entry)).toContain(field);
    }
  });

  it('the options real servers need parse: auth none without credentials, calls at a returned URL with a form body, JSON lines, a 2xx error predicate, a missing status word, lookups over several arrays, what a final word means after a cancel', () => {
    const e = parse({
      ...minimal,
      credentials: undefined,
      auth: { in: 'none' },
      status: {
        url: '{{submitAnswer.links.status}}',
        method: 'POST',
        bodyEncoding: 'form',
        body: { project: '{{options.project}}', job: '{{taskId}}', ref: '{{clientRef}}' },
        statusPath: '/currstate',
        map: { finished: 'completed' },
        missing: 'not_found',
      },
      result: {
        request: { url: '{{statusAnswer.items_url}}', query: { p: '{{options.project}}' } },
        format: 'ndjson',
        documentsPath: '',
      },
      errors: {
        errorWhen: { path: '/status', equals: ['error', 'badrequest'] },
        messagePath: '/message',
        resultNotFound: 'failed',
      },
      cancel: {
        method: 'POST',
        path: '/cancel.json',
        query: { v: '1' },
        body: { job: '{{taskId}}' },
        completedMeans: 'stopped_or_completed',
      },
      list: {
        path: '/listjobs.json',
        itemsPath: ['/pending', '/running', '/finished'],
        matchPath: '/id',
        taskIdPath: '/id',
      },
    }) as HttpEntry;
    expect(e).toMatchObject({
      auth: { in: 'none' },
      status: { method: 'POST', missing: 'not_found' },
      result: { format: 'ndjson' },
      cancel: { completedMeans: 'stopped_or_completed', bodyEncoding: 'json' },
    });
    expect(e.credentials).toBeUndefined();
    expect(keptFields(e)).toEqual(['links.status']);
    const adapter = new HttpAdapter('x', e);
    expect(adapter.completedAfterCancel).toBe('stopped_or_completed');
    expect(needsCredential(e)).toBe(false);
    expect(needsCredential(parse(minimal))).toBe(true);
    // What the client and the HTTP API check before they start a job (a 4xx naming the credential otherwise).
    expect(credentialConfigured(e, 'any-account')).toBe(true);
    expect(credentialConfigured(parse(minimal), 'any-account')).toBe(false);
    // The registry resolves such an entry with no credential at all (and reaches its host with none).
    const resolved = new ProviderRegistry({ providers: { x: e } }, {}).resolve('x', 'any-account');
    expect(resolved.apiKey).toBe('');
  });

  it('docs/providers/scrapyd.md: its configuration is a valid entry that needs no credential', () => {
    const page = fs.readFileSync(path.join(REPO, 'docs/providers/scrapyd.md'), 'utf8');
    const block = /```json\n([\s\S]*?)\n```/.exec(page);
    const entry = parseConfig(JSON.parse(block![1]!), {}).providers.scrapyd! as HttpEntry;
    expect(entry).toMatchObject({
      kind: 'http',
      auth: { in: 'none' },
      cancel: { completedMeans: 'stopped_or_completed' },
    });
    expect(new HttpAdapter('scrapyd', entry).evidence.lookups[0]).toMatchObject({ match: 'strong', lagMs: 0 });
  });

  it('the reference contract declared as an http entry parses for every combination of its optional parts', () => {
    for (const idempotency of [true, false])
      for (const list of [true, false])
        for (const webhookSignature of [true, false]) {
          const e = parse({
            kind: 'http',
            baseUrl: 'http://127.0.0.1:1',
            credentials: {},
            ...referenceAsHttp({ idempotency, list, cancel: true, webhooks: true, webhookSignature }),
            webhook: { url: 'https://us.example.com/v1/webhooks/x', secretEnv: 'S' },
          });
          expect(e.kind).toBe('http');
        }
  });

  it('the worked example of docs/providers.md (Hyperbrowser) is a valid entry', () => {
    const page = fs.readFileSync(path.join(REPO, 'docs/providers.md'), 'utf8');
    const block = /```json\n(\{\n\s+"providers": \{\n\s+"hyperbrowser"[\s\S]*?)\n```/.exec(page);
    expect(block).not.toBeNull();
    const entry = parseConfig(JSON.parse(block![1]!), {}).providers.hyperbrowser!;
    expect(entry).toMatchObject({ kind: 'http', auth: { in: 'header', name: 'x-api-key' } });
  });
});

describe('http kind templates and pointers', () => {
  it('renders bodies: typed whole placeholders, absent members and emptied objects left out, spreads, text interpolation', () => {
    const t = {
      '...': '{{options}}',
      url: '{{url}}',
      n: '{{limit}}',
      label: 'job {{clientRef}}',
      webhook: { url: '{{callbackUrl}}', secret: '{{webhookSecret}}' },
      tags: ['a', '{{clientRef}}'],
    };
    expect(
      renderJson(t, { options: { depth: 2, url: 'overridden' }, url: 'https://x/', limit: 5, clientRef: 'r1' }),
    ).toEqual({
      depth: 2,
      url: 'https://x/',
      n: 5,
      label: 'job r1',
      tags: ['a', 'r1'],
    });
    expect(renderJson(t, { options: {}, url: 'u', clientRef: 'r', callbackUrl: 'https://cb/1' })).toMatchObject({
      webhook: { url: 'https://cb/1' },
    });
    expect(renderJson('{{options}}', {})).toBeUndefined();
  });

  it('placeholders name fields of object variables (`{{options.project}}`, `{{submitAnswer.links.0}}`); a missing step is an absent value', () => {
    const vars = { options: { project: 'shop', n: 2 }, submitAnswer: { links: ['/a', '/b'], job: { id: 'j1' } } };
    expect(renderPath('/items/{{options.project}}/{{submitAnswer.job.id}}.jl', vars)).toBe('/items/shop/j1.jl');
    expect(renderJson({ n: '{{options.n}}', l: '{{submitAnswer.links}}', gone: '{{options.nope}}' }, vars)).toEqual({
      n: 2,
      l: ['/a', '/b'],
    });
    expect(renderUrl('{{submitAnswer.links.1}}?x=1', vars)).toBe('/b?x=1');
    expect(() => renderUrl('{{submitAnswer.links.7}}', vars)).toThrow(/needs \{\{submitAnswer\.links\.7\}\}/);
    expect(valueOf(vars, 'options.project.x')).toBeUndefined();
    expect(unknownPlaceholders('{{url.x}} {{options.a.b}}', ['url', 'options'], ['options'])).toEqual(['url.x']);
  });

  it('the submit answer keeps only the fields later templates name, at their place', () => {
    expect(
      keptAnswer({ jobid: 'j', links: { status: '/s', items: '/i' }, big: 'x'.repeat(9) }, ['links.status', 'jobid']),
    ).toEqual({
      links: { status: '/s' },
      jobid: 'j',
    });
    expect(keptAnswer({ a: 1 }, [])).toBeUndefined();
    expect(keptAnswer({ a: 1 }, ['b'])).toBeUndefined();
    expect(keptAnswer({ a: 1 }, [''])).toEqual({ a: 1 });
  });

  it('answers: JSON lines read as the array of their lines (blank lines skipped, a bad line named); a 2xx error answer by errors.errorWhen', () => {
    const http = new ProviderHttp({
      provider: 'x',
      baseUrl: 'http://127.0.0.1:1',
      auth: { in: 'none' },
      submitTimeoutMs: 1,
      readTimeoutMs: 1,
    });
    const answer = (text: string, status = 200) => {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      return { status, headers: new Headers(), body, text, evidence: { endpoint: 'GET /feed', at: '' } };
    };
    expect(answerBody(http, answer('{"a":1}\n\n{"a":2}\n'), 'jsonl')).toEqual([{ a: 1 }, { a: 2 }]);
    expect(answerBody(http, answer(''), 'ndjson')).toEqual([]);
    expect(() => answerBody(http, answer('{"a":1}\n{"a":'), 'jsonl')).toThrow(/line 2 is not JSON/);
    const e = parse({
      ...minimal,
      errors: { errorWhen: { path: '/status', equals: ['error', 'badrequest'] } },
    }) as HttpEntry;
    expect(isErrorAnswer(e, answer('{"status":"error","message":"spider \'x\' not found"}'))).toBe(true);
    expect(isErrorAnswer(e, answer('{"status":"ok","jobid":"j"}'))).toBe(false);
    expect(isErrorAnswer(parse(minimal) as HttpEntry, answer('{"status":"error"}'))).toBe(false);
  });

  it('renders paths with each value as one encoded segment; an absent value is an error', () => {
    expect(renderPath('/jobs/{{taskId}}/items', { taskId: 'a/b c' })).toBe('/jobs/a%2Fb%20c/items');
    expect(() => renderPath('/jobs/{{taskId}}', {})).toThrow(/needs \{\{taskId\}\}/);
    expect(unknownPlaceholders({ a: '{{url}} {{nope}}', b: ['{{x}}'] }, ['url'])).toEqual(['nope', 'x']);
  });

  it('JSON Pointers: RFC 6901 only, missing steps are undefined', () => {
    expect(['', '/a', '/a/0/b', '/a~1b', '/m~0n'].every(isJsonPointer)).toBe(true);
    expect(['a', 'a.b', '/a~2', '/a~'].some(isJsonPointer)).toBe(false);
    const doc = { a: [{ b: 1 }], 'x/y': 2 };
    expect(pick(doc, '/a/0/b')).toBe(1);
    expect(pick(doc, '/x~1y')).toBe(2);
    expect(pick(doc, '/a/5/b')).toBeUndefined();
    expect(pick('text', '/a')).toBeUndefined();
  });

  it('status words: any case by default, exact on request, unknown → the default', () => {
    const st = (parse(minimal) as HttpEntry).status;
    expect(mapStatus(st, 'DONE')).toBe('completed');
    expect(mapStatus(st, 'paused')).toBe('unrecognised');
    expect(mapStatus({ ...st, matchCase: 'exact' }, 'DONE')).toBe('unrecognised');
    expect(mapStatus({ ...st, default: 'running' }, 'paused')).toBe('running');
  });
});

describe('firecrawl kind pieces', () => {
  it('status words: scraping/completed/failed/cancelled; another case or word is unrecognised', () => {
    expect(['scraping', 'completed', 'failed', 'cancelled'].map(firecrawlState)).toEqual([
      'running',
      'completed',
      'failed',
      'cancelled',
    ]);
    expect(['Completed', 'paused', ''].map(firecrawlState)).toEqual(['unrecognised', 'unrecognised', 'unrecognised']);
  });

  it('a data[] entry becomes a document with its metadata kept; a page error is the document’s error', () => {
    const d = firecrawlDocument({
      markdown: '# Hi',
      links: ['https://a/', 3],
      html: '<h1>Hi</h1>',
      metadata: {
        title: ['T1', 'T2'],
        sourceURL: 'https://s/',
        url: 'https://f/',
        statusCode: 404,
        error: 'Not Found',
      },
    });
    expect(d).toMatchObject({
      url: 'https://s/',
      finalUrl: 'https://f/',
      httpStatus: 404,
      title: 'T1',
      markdown: '# Hi',
      links: ['https://a/'],
      error: { message: 'Not Found' },
    });
    expect(d.data).toMatchObject({ html: '<h1>Hi</h1>', metadata: { statusCode: 404 } });
  });

  it('webhook deliveries: webhookId is the event ID, metadata.clientRef our reference, the type’s suffix the status hint', () => {
    const body = {
      success: true,
      type: 'batch_scrape.page',
      id: 'job-1',
      webhookId: 'wh-1',
      data: [],
      metadata: { clientRef: 'ref-1' },
    };
    expect(firecrawlWebhook.parse(body, {}, Buffer.from(JSON.stringify(body)))).toEqual({
      ok: true,
      event: {
        eventId: 'wh-1',
        type: 'batch_scrape.page',
        taskId: 'job-1',
        clientRef: 'ref-1',
        providerStatus: 'scraping',
      },
    });
    expect(firecrawlEventStatus('crawl.cancelled')).toBe('cancelled');
    expect(firecrawlWebhook.parse({ type: 'crawl.completed' }, {}, Buffer.from('{}')).ok).toBe(false);
  });
});
