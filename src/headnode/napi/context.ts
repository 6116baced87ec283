/**
 * What the dev NAPI's route modules share: the state, how to make a change durable, and
 * the changefeed to announce it on.
 */
import type { Logger } from '../../common/log.js';
import type { ChangeItem } from '../../common/changefeed/protocol.js';
import type { NapiState } from './state.js';

export interface NapiContext {
  state: NapiState;
  log: Logger;
  /** OUI (6 hex digits) for generated MACs. */
  macOui: string;
  /** Resolves once every change made so far is on disk. */
  commit(): Promise<void>;
  /** Announce a committed change to changefeed listeners. */
  publish(item: ChangeItem): void;
}
