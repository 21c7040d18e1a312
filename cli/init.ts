import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_CONFIG_FILE } from '../gateway/config.js';

const HEADER = `# task-router configuration, written by \`task-router init\`. Every setting is shown with its default;
# delete what you do not change. Relative paths are resolved from this file's folder.
# Run: task-router serve --config <this file>   (task-router check --config <this file> validates it)
`;

/**
 * The configuration \`init\` writes: the shipped config/default.yaml, every setting commented, with the
 * rule set, prompts and wrapper list left to the shipped ones (their paths in default.yaml are relative
 * to the package, which a copy elsewhere would break).
 */
export function initialConfig(): string {
  const shipped = readFileSync(DEFAULT_CONFIG_FILE, 'utf8');
  const body = shipped
    .split('\n')
    .filter((line, index) => !(index === 0 && line.startsWith('# task-router gateway configuration')))
    .map((line) => {
      if (/^rules:/.test(line)) return '# The rule set; null: the shipped one (config/rules.json in the package). Name a file to use your own.\nrules: null';
      if (/^prompts:/.test(line)) return '# The folder of system prompts; null: the shipped prompts/. Copy it to edit the prompts.\nprompts: null';
      return line;
    })
    .join('\n');
  return `${HEADER}${body}`;
}

/**
 * The same configuration as JSON, for a file named *.json (readDataFile reads a file by its
 * extension). JSON has no comments, so what each setting does is only in the YAML form.
 */
export function initialConfigJson(): string {
  return `${JSON.stringify(parseYaml(initialConfig()), null, 2)}\n`;
}
