/**
 * A provider entry's URLs carry no credentials: a `baseUrl` with user-info made every call fail
 * before it was sent, with fetch's message quoting the URL, password and all, into the job's
 * `last_error` (and the submit, never sent, was taken as ambiguous: the job waited in `unknown`).
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';

const config = (entry: Record<string, unknown>) => ({
  temporal: { address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'q' },
  storeUrl: 'sqlite::memory:',
  defaultAccount: 'acme',
  defaultProvider: 'reference',
  providers: {
    reference: { kind: 'reference', credentials: { default: { apiKey: 'sk-test-0123456789abcdef' } }, ...entry },
  },
});

describe('provider URLs in the configuration', () => {
  it('refuses a baseUrl with user-info, naming the field and where the key belongs', () => {
    let message = '';
    try {
      parseConfig(config({ baseUrl: 'http://ops:pw-hunter2@127.0.0.1:9/' }), {});
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/must not carry credentials \(user-info\)/);
    expect(message).toMatch(/providers\.reference\.baseUrl/);
    expect(message).not.toContain('pw-hunter2');
  });

  it('refuses a baseUrl with a credential parameter', () => {
    expect(() => parseConfig(config({ baseUrl: 'https://api.example.com/?api_key=abcdef0123456789' }), {})).toThrow(
      /must not carry credentials \(query parameter "api_key"\)/,
    );
  });

  it('accepts a plain baseUrl', () => {
    const c = parseConfig(config({ baseUrl: 'https://api.example.com/v1' }), {});
    expect((c.providers.reference as { baseUrl: string }).baseUrl).toBe('https://api.example.com/v1');
  });

  it('refuses a Zyte storageUrl with user-info, as every provider URL', () => {
    const zyte = {
      ...config({}),
      providers: {
        zyte: {
          kind: 'zyte',
          project: '123',
          spider: 'quotes',
          storageUrl: 'https://ops:pw-hunter2@storage.example.com',
          credentials: { default: { apiKey: 'sk-test-0123456789abcdef' } },
        },
      },
      defaultProvider: 'zyte',
    };
    expect(() => parseConfig(zyte, {})).toThrow(/must not carry credentials[\s\S]*providers\.zyte\.storageUrl/);
  });
});
