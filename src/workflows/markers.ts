/** Texts the run writes into sessions when work is cut short (shared by workflow and activities). */

/** Marks the partial text of an assistant message cut short by abort or interrupt. */
export const INTERRUPTED_MARKER = "[INTERRUPTED]";
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
