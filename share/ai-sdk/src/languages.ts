// The languages runCode offers, the kernelspec each runs on, and their names
// as the model and notes say them.

export const LANGUAGES = ['python', 'javascript', 'typescript', 'r', 'bash'] as const;
export type Language = (typeof LANGUAGES)[number];

/**
 * The kernelspec of each language. Python's is the gateway's default
 * kernelspec (`python`, sandgate-python) unless `kernelName` names another.
 */
export const DEFAULT_KERNELSPECS: Readonly<Record<Language, string | undefined>> = {
  python: undefined,
  javascript: 'javascript',
  typescript: 'typescript',
  r: 'ir',
  bash: 'bash',
};

export const LANGUAGE_NAMES: Readonly<Record<Language, string>> = {
  python: 'Python',
  javascript: 'JavaScript',
  typescript: 'TypeScript',
  r: 'R',
  bash: 'Bash',
};

export function isLanguage(value: unknown): value is Language {
  return typeof value === 'string' && (LANGUAGES as readonly string[]).includes(value);
}
