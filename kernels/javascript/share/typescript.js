// TypeScript cells: type-checked, then transpiled to the JavaScript that
// rewrite.js prepares for running.
//
// Each check is one program of three files: ambient.d.ts (the kernel's and
// Node's globals, loosely typed: Debian has no @types/node), prelude.ts (what
// earlier cells declared) and the cell, made a module so that top-level await
// type-checks and its declarations may shadow earlier ones. A cell with an
// error diagnostic does not run. A cell's declarations join the prelude as it
// runs, when the value side keeps them (rewrite.js reports each top-level name
// once its declaration has run): interfaces, type aliases and `declare`
// statements, which have no value, and functions, which are hoisted, as the
// cell starts; classes, enums, variables and imports once their declaration
// has run, whatever happens after it (an error, an interrupt). Interfaces,
// type aliases, enums, classes and functions join as written, variables and
// imports as `declare` statements of the type the checker gave them.
'use strict';

module.exports = function makeTypescript(ts) {
  const root = '/__sandgate__/';
  const ambientName = `${root}ambient.d.ts`;
  const preludeName = `${root}prelude.ts`;
  const ambient = `
declare function display(value: any, metadata?: object): void;
declare namespace display {
  interface ImageMetadata {
    width?: number;
    height?: number;
    unconfined?: boolean;
    [key: string]: unknown;
  }
  function png(data: any, metadata?: ImageMetadata): void;
  function jpeg(data: any, metadata?: ImageMetadata): void;
  function html(html: string, metadata?: object): void;
  function svg(svg: string, metadata?: ImageMetadata): void;
  function markdown(text: string, metadata?: object): void;
  function json(value: any, metadata?: object): void;
  function text(text: string, metadata?: object): void;
}
declare var require: any, module: any, exports: any, process: any, Buffer: any, global: any;
declare var __dirname: string, __filename: string;
declare var console: any, fetch: any, URL: any, URLSearchParams: any, TextEncoder: any, TextDecoder: any;
declare var AbortController: any, Blob: any, performance: any, crypto: any, WebAssembly: any;
declare function setTimeout(callback: (...args: any[]) => void, ms?: number, ...args: any[]): any;
declare function setInterval(callback: (...args: any[]) => void, ms?: number, ...args: any[]): any;
declare function setImmediate(callback: (...args: any[]) => void, ...args: any[]): any;
declare function clearTimeout(handle: any): void;
declare function clearInterval(handle: any): void;
declare function clearImmediate(handle: any): void;
declare function queueMicrotask(callback: () => void): void;
declare function structuredClone<T>(value: T): T;
declare module "*";
`;
  const options = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.NodeJs,
    lib: ['lib.es2022.d.ts'],
    types: [],
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
    allowSyntheticDefaultImports: true,
  };
  const transpileOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    isolatedModules: true,
    preserveValueImports: true,
    useDefineForClassFields: true,
    esModuleInterop: true,
  };

  const prelude = new Map();  // "value:x" / "type:T" -> declaration text
  const fileCache = new Map();  // lib and package files, parsed once
  let cellCount = 0;
  let oldProgram;

  function host(files) {
    const base = ts.createCompilerHost(options, true);
    return {
      ...base,
      getSourceFile(fileName, languageVersion) {
        if (files.has(fileName)) {
          return files.get(fileName);
        }
        if (!fileCache.has(fileName)) {
          const text = base.readFile(fileName);
          fileCache.set(fileName, text === undefined ? undefined : ts.createSourceFile(fileName, text, languageVersion, true));
        }
        return fileCache.get(fileName);
      },
      fileExists: (fileName) => files.has(fileName) || base.fileExists(fileName),
      readFile: (fileName) => (files.has(fileName) ? files.get(fileName).text : base.readFile(fileName)),
      writeFile: () => {},
      getCurrentDirectory: () => process.cwd(),
    };
  }

  function format(diagnostic) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    if (!diagnostic.file) {
      return `error TS${diagnostic.code}: ${message}`;
    }
    const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    return `cell(${line + 1},${character + 1}): error TS${diagnostic.code}: ${message}`;
  }

  function typeError(diagnostics) {
    const first = diagnostics[0];
    const error = new Error(`TS${first.code}: ${ts.flattenDiagnosticMessageText(first.messageText, '\n')}`);
    error.name = 'TSError';
    error.traceback = diagnostics.map(format);
    return error;
  }

  // Type-checks a cell; throws a TSError naming the diagnostics, or returns
  // its JavaScript and declarations(), which the cell calls as it starts (see
  // entriesOf).
  function check(code) {
    const cellName = `${root}cell${++cellCount}.ts`;
    const files = new Map([
      [ambientName, ts.createSourceFile(ambientName, ambient, ts.ScriptTarget.ES2022, true)],
      [preludeName, ts.createSourceFile(preludeName, [...prelude.values()].join('\n'), ts.ScriptTarget.ES2022, true)],
      [cellName, ts.createSourceFile(cellName, `${code}\nexport {};\n`, ts.ScriptTarget.ES2022, true)],
    ]);
    const program = ts.createProgram([ambientName, preludeName, cellName], options, host(files), oldProgram);
    oldProgram = program;
    const cell = program.getSourceFile(cellName);
    const diagnostics = [...program.getSyntacticDiagnostics(cell), ...program.getSemanticDiagnostics(cell)]
      .filter((d) => d.category === ts.DiagnosticCategory.Error);
    if (diagnostics.length > 0) {
      throw typeError(diagnostics);
    }
    const javascript = ts.transpileModule(code, { compilerOptions: transpileOptions, reportDiagnostics: false }).outputText;
    const entries = entriesOf(program, cell);
    return {
      javascript,
      declarations() {
        entries.filter((entry) => entry.name === null).forEach(apply);
        return (...names) => entries.filter((entry) => names.includes(entry.name)).forEach(apply);
      },
    };
  }

  function textOf(node, cell) {
    const text = cell.text.slice(node.getStart(cell), node.end);
    return text.replace(/^\s*export\s+(default\s+)?/, '');
  }

  function declarationOf(checker, identifier, keyword) {
    let type = 'any';
    try {
      type = checker.typeToString(checker.getTypeAtLocation(identifier), undefined,
        ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseFullyQualifiedType);
    } catch (_) {
      // keep any
    }
    if (/__sandgate__|\.\.\./.test(type)) {
      type = 'any';
    }
    return `declare ${keyword} ${identifier.text}: ${type};`;
  }

  // An entry joins the prelude; a class or enum replaces an earlier cell's
  // interface or type alias of its name.
  function apply({ key, text, replaces }) {
    if (replaces) {
      prelude.delete(replaces);
    }
    prelude.delete(key);
    prelude.set(key, text);
  }

  function identifiersOf(name, out) {
    if (ts.isIdentifier(name)) {
      out.push(name);
    } else if (ts.isObjectBindingPattern(name) || ts.isArrayBindingPattern(name)) {
      for (const element of name.elements) {
        if (!ts.isOmittedExpression(element)) {
          identifiersOf(element.name, out);
        }
      }
    }
  }

  // What a cell's declarations add to the prelude: entries { key, text, name,
  // replaces }. Those with a null name (interfaces, type aliases, `declare`
  // statements: no value) join as the cell starts; the others once the cell
  // reports that the declaration of their name has run (functions at the
  // start, as they are hoisted).
  function entriesOf(program, cell) {
    const checker = program.getTypeChecker();
    const entries = new Map();  // key -> entry
    const add = (key, text, name, replaces = null) => entries.set(key, { key, text, name, replaces });
    for (const statement of cell.statements) {
      const ambient = (statement.modifiers || []).some((m) => m.kind === ts.SyntaxKind.DeclareKeyword);
      const nameOf = (identifier) => (ambient ? null : identifier.text);
      if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) {
        add(`type:${statement.name.text}`, textOf(statement, cell), null);
      } else if (ts.isFunctionDeclaration(statement) && statement.name) {
        // Overloads: the signatures and the implementation are one entry.
        const key = `value:${statement.name.text}`;
        const earlier = entries.get(key);
        const text = textOf(statement, cell);
        add(key, earlier ? `${earlier.text}\n${text}` : text, nameOf(statement.name));
      } else if ((ts.isClassDeclaration(statement) || ts.isEnumDeclaration(statement)) && statement.name) {
        const name = statement.name.text;
        add(`value:${name}`, textOf(statement, cell), nameOf(statement.name), `type:${name}`);
      } else if (ts.isVariableStatement(statement)) {
        const flags = statement.declarationList.flags;
        const keyword = flags & ts.NodeFlags.Const ? 'const' : flags & ts.NodeFlags.Let ? 'let' : 'var';
        for (const declaration of statement.declarationList.declarations) {
          const names = [];
          identifiersOf(declaration.name, names);
          names.forEach((identifier) =>
            add(`value:${identifier.text}`, declarationOf(checker, identifier, keyword), nameOf(identifier)));
        }
      } else if (ts.isImportDeclaration(statement) && statement.importClause && !statement.importClause.isTypeOnly) {
        const clause = statement.importClause;
        const names = [];
        if (clause.name) {
          names.push(clause.name);
        }
        if (clause.namedBindings && ts.isNamespaceImport(clause.namedBindings)) {
          names.push(clause.namedBindings.name);
        } else if (clause.namedBindings) {
          names.push(...clause.namedBindings.elements.filter((e) => !e.isTypeOnly).map((e) => e.name));
        }
        names.forEach((identifier) =>
          add(`value:${identifier.text}`, declarationOf(checker, identifier, 'const'), identifier.text));
      }
    }
    // A class or enum merged with an interface of the same cell keeps it.
    for (const entry of entries.values()) {
      if (entry.replaces && entries.has(entry.replaces)) {
        entry.replaces = null;
      }
    }
    return [...entries.values()];
  }

  return { check };
};
