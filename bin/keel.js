#!/usr/bin/env node
// The `keel` command: runs the TypeScript sources through tsx's CommonJS loader (no build step).
require("tsx/cjs");
require("../src/cli/main.ts").cli();
