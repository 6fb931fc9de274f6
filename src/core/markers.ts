/**
 * Texts Keel writes into sessions when work is cut short or repaired. The model reads them, so
 * they say what happened in plain words; tests and docs refer to them by these names.
 */

/** Starts the error text of an assistant entry whose call overflowed the model's context window. */
export const CONTEXT_OVERFLOW_PREFIX = "context overflow: ";
/** Marks the partial text of an assistant message cut short by abort or interrupt. */
export const INTERRUPTED_MARKER = "[INTERRUPTED]";
/** Starts the text of the assistant entry written when a model call or the run failed. */
export const FAILED_MARKER = "[FAILED]";
/** Result of a tool call that an abort cut short or kept from running. */
export const ABORTED_TOOL_RESULT_TEXT = "[Aborted by user]";
/** Result of tool calls cut short by an interrupting message. */
export const INTERRUPTED_TOOL_RESULT_TEXT = "[Interrupted: the user sent a new message]";
/** Sent after an empty assistant response (no text, no tool call). */
export const EMPTY_RESPONSE_NUDGE =
  "Your last response was empty. Continue with the task: call a tool or answer in text.";
/** Result of an unsafe tool whose earlier attempt may have run (it is not run again). */
export const UNKNOWN_OUTCOME_TEXT =
  "The tool was started by an earlier attempt that did not report back (the worker stopped). " +
  "It was not run again because running it twice may not be safe. Check the workspace to see " +
  "whether it took effect before running it again.";
/**
 * Result written for a tool call whose run ended (failed, or stopped from outside) before the
 * call reported: found when the session is opened again, or written when the run fails.
 */
export const UNFINISHED_TOOL_RESULT_TEXT =
  "No result was recorded for this tool call: the run ended before it reported back. It may or " +
  "may not have taken effect; check the workspace before running it again.";
/** Result of a tool call a fork cut off: the new session holds the call but not its run. */
export const FORKED_TOOL_RESULT_TEXT =
  "This tool call was not run in this session: it was forked from another session at the call, " +
  "before its result. Call the tool again if its result is still needed.";
/** Error text of the assistant entry written when a run ended before the model answered. */
export const UNANSWERED_TURN_TEXT = "the run ended before the model answered";
