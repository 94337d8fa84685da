/**
 * Recorded workflow histories as the repository keeps them: without paths of the machine that
 * recorded them (failure stack traces name files), so that a history committed from one machine
 * says nothing of it and replays anywhere.
 */
import os from 'node:os';
import path from 'node:path';

const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

/** Absolute paths a history may carry: a home, temporary or checkout folder of some machine. */
export const MACHINE_PATH = /(?:file:\/\/)?\/(?:home|root|Users|tmp|work|var\/folders|private)\/[^\s"'\\)]*/g;

/** `json` with the repository's folder written `<repo>` and any other absolute path `<path>`. */
export function withoutMachinePaths(json: string): string {
  const home = os.homedir();
  return json.split(REPO).join('<repo>').split(home).join('<home>').replace(MACHINE_PATH, '<path>');
}
