/**
 * The HTTP API for backend services and the provider webhook receiver. See `app.ts` for how it is
 * put together, `routes/` for the endpoints, `access.ts` and `auth.ts` for API keys and rate
 * limits, `problems.ts` for error answers and `webhooks.ts` for provider events.
 */
export { buildApi, type BuildApiOptions } from './app.js';
export { type RouteAuth } from './access.js';
export { toProblem } from './errorMapping.js';
export { startApi, runApiMain, createApiKey, keysFileOf, type StartApiOptions, type RunningApi } from './main.js';
export {
  ApiKeyring,
  ApiKeyEntrySchema,
  ApiKeysFileSchema,
  addKeyToFile,
  generateApiKey,
  hashApiKey,
  loadApiKeys,
  type ApiKeyEntry,
  type Caller,
} from './auth.js';
export {
  ApiProblem,
  PROBLEM_TYPES,
  ProblemSchema,
  problemType,
  PROBLEM_CONTENT_TYPE,
  type Problem,
  type ProblemSlug,
} from './problems.js';
export {
  receiveWebhook,
  verifySha256Signature,
  webhookSecret,
  receivesWebhooks,
  type ParsedEvent,
  type ProviderWebhook,
  type WebhookAnswer,
  type WebhookDeps,
} from './webhooks.js';
export * from './schemas.js';
