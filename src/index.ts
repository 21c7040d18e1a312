/**
 * task-router's pure core: deterministic ANSWER / ACTION routing of one message, with no I/O.
 */
export { CACHE_TEXT_LENGTH, createClassifier, DEFAULT_CACHE_ENTRIES, DEFAULT_SCAN_BUDGET, ENGINES, defaultContextModel, defaultLexicon, defaultRuleSet, defaultScorer, type Classifier, type ClassifierOptions } from './classifier.js';
export { afterThanks, contextFeatures, offerIn, readContext, turnsOf, type ContextCues, type ContextReading, type Turns } from './context.js';
export { createScorer, featureNames, namedFeatures, ScorerDataSchema, ScorerError, type FeatureWeight, type HashedFeatures, type Scorer, type ScorerData } from './scorer.js';
export type { MessageFeatures } from './features.js';
export { trainScorer, type TrainedScorer, type TrainingExample, type TrainingFold, type TrainOptions } from './train.js';
export { confidenceOf } from './classify.js';
export { CATEGORIES, CATEGORY_ROLES, type Category, type Stakes } from './categories.js';
export { DecisionSchema, TriggerSchema, MODES, CONFIDENCES, STEPS, type Confidence, type Debate, type Decision, type Mode, type Step, type Trigger } from './decision.js';
export { ENGINE_NAMES, type CompiledPattern, type EngineName, type RegexEngine } from './engines/engine.js';
export { normalizeText } from './normalize.js';
export { compileLexicon, LexiconError, type Lexicon, type LexiconData } from './lexicon.js';
export { compileRuleSet, RuleSetError, RuleSetSchema, type CompiledRuleSet, type RuleSetData } from './ruleset.js';
export { corpusText, CorpusLineSchema, evaluate, GATES, type CorpusLine, type EvalReport, type Miss } from './evaluate.js';
export { PROMPT_FILES, ROUTES, routeOf, type PromptSet, type Route } from './route.js';
export { CHAT_FORMATS, FORMATS, formatForPath, STRATEGIES, type ChatFormat, type FormatName, type JsonObject, type Strategy } from './formats/index.js';
export { previewOf, redactSecrets, shownText } from './redact.js';
export { DecisionRecordSchema, memoryEntry, type DecisionRecord } from './records.js';
export { HEADER, HEADER_PREFIX } from './decision-headers.js';
export { humanTurns, type HumanTurnOptions, type HumanTurns } from './human-turns.js';
export { createResponseChain, previousResponseId, responseIdIn, type ChainLink, type ResponseChain, type ResponseChainLimits } from './response-chain.js';
export {
  chainLinkOf, classifyRequest, continuedRequest, debatesOf, decisionHeaders, jsonBytes, readHumanTurns, routeRequest, sessionReport, settleUnsure, softRoutedBody, withTiebreak,
  type BodyBytes, type ClassifiedRequest, type DebateCarried, type DebateKind, type RouteInputs, type RoutedDecision, type RoutedRequest, type RoutingState,
} from './route-request.js';
export { TIEBREAK_RESULTS, UNSURE_POLICIES, type TiebreakResult, type TiebreakVerdict, type Tiebreaker, type UnsurePolicy } from './unsure.js';
export { DEFAULT_WRAPPERS, readWrappers, stripWrappers, wrapperNames, WrappersError, WrappersSchema, type Stripped, type Wrapper, type WrapperData } from './wrappers.js';
export {
  emptySession, MAX_ERROR_SIGNATURES, OUTCOMES, recordDecision, recordOutcome, takePending,
  type Outcome, type OutcomeReport, type OutcomeResult, type PendingDebate, type ReportedKey, type SessionLimits, type SessionState, type TaskSeen, type TaskState,
} from './failure-debate.js';
export { debatable, FAILURE_TRIGGERS, FAILURE_VERDICTS, type FailureTrigger, type FailureVerdict } from './failure-policy.js';
export { errorSignature, normalizeError, taskKeyOf } from './task-keys.js';
