/** The events of a running reference provider (`sim.events`): one `request` and one `response` per API request, one `job` per state change. */
import type { EventEmitter } from 'node:events';
import type { JobTransition } from './jobRecord.js';
import type { Endpoint, SimRequestEvent } from './schemas.js';

/** Event emitted when the sim answered (or dropped) an API request. */
export interface SimResponseEvent {
  /** epoch ms when the answer was sent or the socket destroyed. */
  at: number;
  method: string;
  path: string;
  endpoint: Endpoint;
  account: string | null;
  jobId: string | null;
  /** HTTP status, or `"dropped"` when a fault destroyed the connection. */
  status: number | 'dropped';
  /** ms between receipt and answer. */
  durationMs: number;
}

/** Events of `sim.events`: `request` and `response` per API request, `job` per state change. */
export interface SimEventMap {
  request: [SimRequestEvent];
  response: [SimResponseEvent];
  job: [JobTransition];
}

/** Typed event emitter of the sim (Node `EventEmitter`). */
export type SimEvents = EventEmitter<SimEventMap>;
