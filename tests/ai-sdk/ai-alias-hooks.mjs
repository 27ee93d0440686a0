// Module resolve hook (registered by support.mjs when the tests run on an
// `ai` other than the package's own): the package's `import ... from 'ai'`
// (and 'ai/...') resolves to the alias installed beside it, e.g. `ai6`
// (npm:ai@^6), as it would in an application that has only that version.
let distUrl;
let alias;

export function initialize(data) {
  distUrl = data.distUrl;
  alias = data.alias;
}

export async function resolve(specifier, context, next) {
  const fromPackage = context.parentURL?.startsWith(distUrl);
  if (fromPackage && (specifier === 'ai' || specifier.startsWith('ai/'))) return next(alias + specifier.slice(2), context);
  return next(specifier, context);
}
