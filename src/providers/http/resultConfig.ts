/**
 * Where an `http` entry's result is and how it is read (`result` of the entry, see `config.ts`):
 * the call, the answer's format (one JSON document, or JSON lines), the page and documents in it,
 * the field pointers and the paging.
 */
import { z } from 'zod';
import { callFields, checkCall, PointerSchema, StatusCodes, TEMPLATE_VARS } from './callConfig.js';

/** Where each result field is, relative to the page (or to each document). Absent: the field stays empty. */
const FieldsSchema = z
  .strictObject({
    url: PointerSchema,
    finalUrl: PointerSchema,
    httpStatus: PointerSchema,
    title: PointerSchema,
    byline: PointerSchema,
    excerpt: PointerSchema,
    lang: PointerSchema,
    siteName: PointerSchema,
    publishedTime: PointerSchema,
    text: PointerSchema,
    markdown: PointerSchema,
    links: PointerSchema,
    contentLength: PointerSchema,
    /** A per-document failure message (documents only). */
    error: PointerSchema,
    /**
     * The provider's own ID of each document (documents only): its identity, so that a document
     * the provider serves twice (a repeated page boundary) is stored once. Absent: the document's
     * URL with its position (offset paging and unpaged lists), else with a hash of its content.
     */
    id: PointerSchema,
  })
  .partial()
  .prefault({});

/** How multi-document results are paged: `offset`/`limit` parameters, an opaque `cursor`, or a `next` link in the answer. */
const PaginationSchema = z.discriminatedUnion('style', [
  z.strictObject({
    style: z.literal('offset'),
    offsetParam: z.string().min(1).default('offset'),
    limitParam: z.string().min(1).default('limit'),
    /**
     * Pointer to the total number of documents in each page's answer. With it the read ends at that
     * total, not at the first short or empty page: an empty page before the total (a page not yet
     * written) is read again at the same offset, a bounded number of times.
     */
    totalPath: PointerSchema.optional(),
  }),
  z.strictObject({
    style: z.literal('cursor'),
    cursorParam: z.string().min(1).default('cursor'),
    cursorPath: PointerSchema,
    limitParam: z.string().min(1).optional(),
  }),
  z.strictObject({ style: z.literal('next'), nextPath: PointerSchema }),
]);

/**
 * The result call, when the result is not in the final status answer: `GET` (default) or `POST`,
 * at `path` or at a `url` an earlier answer returned (`{{submitAnswer.links.items}}`,
 * `{{statusAnswer.result_url}}`), with `query`, `headers` and a JSON or form `body` (templates of
 * the `result` context: the task, the request, `submitAnswer`, `statusAnswer`). A template that
 * names `statusAnswer` makes the read ask the status first (one more call per result read).
 */
const ResultRequestSchema = z
  .strictObject({ method: z.enum(['GET', 'POST']).default('GET'), ...callFields(TEMPLATE_VARS.result) })
  .superRefine(checkCall);

/**
 * Where the result is: in the final status answer (no `request`), or from a separate `request`.
 * `format`: `json` (default: the answer is one JSON document) or `jsonl` (also `ndjson`: JSON
 * lines, one JSON value a line, blank lines skipped; the answer is then read as the array of its
 * lines, so `documentsPath: ""` means every line and `pagePath: "/0"` the first). `pagePath`
 * points at a single page object; `documentsPath` at an array of documents (crawl pages, dataset
 * items), paged by `pagination` when the answer is paged.
 */
export const ResultSchema = z
  .strictObject({
    request: ResultRequestSchema.optional(),
    format: z.enum(['json', 'jsonl', 'ndjson']).default('json'),
    pagePath: PointerSchema.optional(),
    documentsPath: PointerSchema.optional(),
    fields: FieldsSchema,
    pagination: PaginationSchema.optional(),
    notReadyStatusCodes: StatusCodes.default([202, 204]),
  })
  .refine((r) => r.pagePath !== undefined || r.documentsPath !== undefined, {
    message: 'result needs pagePath (one page) or documentsPath (many documents)',
    path: ['pagePath'],
  })
  .refine((r) => r.pagination === undefined || (r.documentsPath !== undefined && r.request !== undefined), {
    message: 'result.pagination needs result.documentsPath and result.request',
    path: ['pagination'],
  })
  .refine((r) => r.format === 'json' || r.request !== undefined, {
    message: 'a JSON-lines result needs result.request (the status answer is one JSON document)',
    path: ['format'],
  });
