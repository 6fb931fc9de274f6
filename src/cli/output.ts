/** Where the CLI writes: stdout, or a test's buffer; whether a person watches decides spinners. */
export interface Output {
  write(text: string): void;
  /** True when a person is watching (stdout is a terminal): spinners are drawn. */
  isTTY: boolean;
}

export const stdoutOutput: Output = {
  write: (text) => process.stdout.write(text),
  isTTY: Boolean(process.stdout.isTTY),
};
