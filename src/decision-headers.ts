/** Every header of ours starts with this; a client's are dropped, an upstream's never reach the client. */
export const HEADER_PREFIX = 'x-task-router-';

export const HEADER = {
  mode: `${HEADER_PREFIX}mode`,
  confidence: `${HEADER_PREFIX}confidence`,
  decisionId: `${HEADER_PREFIX}decision-id`,
  route: `${HEADER_PREFIX}route`,
  step: `${HEADER_PREFIX}step`,
  routing: `${HEADER_PREFIX}routing`,
  override: `${HEADER_PREFIX}override`,
  overrideToken: `${HEADER_PREFIX}override-token`,
  debate: `${HEADER_PREFIX}debate`,
  task: `${HEADER_PREFIX}task`,
} as const;
