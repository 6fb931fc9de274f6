/** Regular expressions callers give (policy rules, eval checks): whether one can be used at all. */

/** Whether `source` compiles as a JavaScript regular expression. */
export function compilesAsRegExp(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}
