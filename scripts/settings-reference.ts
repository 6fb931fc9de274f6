/**
 * Writes docs/configuration.md and src/core/setting-names.ts from the settings schemas
 * (src/cli/settings-reference.ts): `npm run settings:doc`.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderConfigurationReference, renderSettingNames } from "../src/cli/settings-reference";

const root = join(__dirname, "..");
writeFileSync(join(root, "docs/configuration.md"), renderConfigurationReference());
writeFileSync(join(root, "src/core/setting-names.ts"), renderSettingNames());
process.stdout.write("wrote docs/configuration.md and src/core/setting-names.ts\n");
