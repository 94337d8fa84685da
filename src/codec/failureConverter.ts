/**
 * The failure converter used when payload encryption is on (`dataConverterFor`): error messages
 * and stack traces travel in the failure's encoded attributes (a payload, so encrypted by the
 * codec) instead of in clear text. Bundled into the workflow code too (`failureConverterPath`).
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
