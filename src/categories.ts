/**
 * What each rule category means to the algorithm. The words live in config; what a category does
 * (count towards ACTION, block ANSWER precedence, raise the stakes of a planning debate) lives here.
 */
export const CATEGORIES = [
  'file', 'web', 'code', 'reference', 'memory_recall', 'request',
  'repository', 'search', 'web_action', 'shell_read',
  'operation', 'execution', 'memory', 'shell', 'error_log', 'go_ahead', 'destructive', 'deployment',
  'security', 'bulk', 'vague', 'bypass', 'hold', 'negated', 'content', 'live',
] as const;

export type Category = (typeof CATEGORIES)[number];
export type Stakes = 'none' | 'medium' | 'high';

interface CategoryRole {
  /** A match counts as an ACTION trigger. */
  readonly trigger: boolean;
  /** A reference to something outside the model (files, web, the user's own work, memory): a question that carries one is not answered directly. */
  readonly external: boolean;
  /** Reading only: an ACTION made of read-only triggers alone is never debated. */
  readonly readOnly: boolean;
  /** The stakes a match adds to a planning debate. */
  readonly stakes: Stakes;
}

const role = (trigger: boolean, external: boolean, readOnly: boolean, stakes: Stakes = 'none'): CategoryRole =>
  ({ trigger, external, readOnly, stakes });

export const CATEGORY_ROLES: Readonly<Record<Category, CategoryRole>> = {
  file: role(true, true, true),
  web: role(true, true, true),
  code: role(true, true, true),
  reference: role(true, true, true),
  memory_recall: role(true, true, true),
  // A request inside a question ("explain the diff and then commit it") is no question to answer.
  request: role(true, true, false),
  repository: role(true, false, true),
  search: role(true, false, true),
  web_action: role(true, false, true),
  shell_read: role(true, false, true),
  operation: role(true, false, false),
  execution: role(true, false, false),
  memory: role(true, false, false),
  shell: role(true, false, false),
  error_log: role(true, false, true),
  go_ahead: role(true, false, false),
  destructive: role(true, false, false, 'high'),
  deployment: role(true, false, false, 'high'),
  security: role(false, false, false, 'high'),
  bulk: role(false, false, false, 'medium'),
  // Vague wording only matters when the evidence for ACTION is thin (WEAK confidence).
  vague: role(false, false, false, 'medium'),
  bypass: role(false, false, false),
  // "wait, don't do it yet": cancels the go-ahead it qualifies.
  hold: role(false, false, false),
  // "don't change anything yet": the named action is not requested.
  negated: role(false, false, false),
  // "fix the grammar", "make this sound friendlier": the verb acts on the message's own text, which the
  // reply rewrites; it asks for no change to anything outside the conversation.
  content: role(false, false, false),
  // "the latest version", "prices today": what changes by the hour, asked for now or only mentioned; the
  // scorer weighs it (a question that wants it now needs the web, a story that mentions it does not).
  live: role(false, false, true),
};
