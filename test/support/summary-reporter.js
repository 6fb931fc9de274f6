// Prints one plain closing line ("jest: N passed, N failed, N skipped") that CI logs can be read by.
// With KEEL_TEST_SUMMARY_FILE set it also writes that line there, so `.ci/run` can end its log with
// it: the line a reader of the log takes as the test runner's verdict must be the last one.
const { writeFileSync } = require("node:fs");

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `jest: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`;
    process.stdout.write(line);
    const file = process.env.KEEL_TEST_SUMMARY_FILE;
    if (file) writeFileSync(file, line);
  }
}
module.exports = SummaryReporter;
