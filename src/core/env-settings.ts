/** Pieces of the environment schemas the API and the worker share. */
import { z } from "zod";

/** A yes/no variable: "true" or "1", "false" or "0". */
export const booleanFlag = z
  .enum(["true", "false", "1", "0"])
  .transform((value) => value === "true" || value === "1");

/** One line naming every invalid variable and why, never its value (it may be a secret). */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join(".") || "(value)"}: ${issue.message}`).join("; ");
}
