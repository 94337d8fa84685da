/**
 * The scrape workflow's message interface, as the workflows import it. Its one definition is
 * `src/model/messages.ts`, shared with the client package, which must not load
 * `@temporalio/workflow`.
 */
export * from '../../model/messages.js';
