/**
 * The HTTP API for backend services and the provider webhook receiver (issue 5). See `app.ts`
 * for the endpoints, `auth.ts` for API keys, `problems.ts` for error answers and `webhooks.ts`
 * for provider events.
 */
export { buildApi, type BuildApiOptions, type RouteAuth } from './app.js';
export { toProblem } from './errorMapping.js';
export { startApi, runApiMain, createApiKey, keysFileOf, type StartApiOptions, type RunningApi } from './main.js';
export { ApiKeyring, ApiKeyEntrySchema, ApiKeysFileSchema, addKeyToFile, generateApiKey, hashApiKey, loadApiKeys, type ApiKeyEntry, type Caller } from './auth.js';
export { ApiProblem, PROBLEM_TYPES, ProblemSchema, problemType, PROBLEM_CONTENT_TYPE, type Problem, type ProblemSlug } from './problems.js';
export { receiveWebhook, verifySha256Signature, webhookSecret, receivesWebhooks, type ParsedEvent, type ProviderWebhook, type WebhookAnswer, type WebhookDeps } from './webhooks.js';
export * from './schemas.js';
