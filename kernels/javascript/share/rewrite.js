// Rewrites one JavaScript cell so that it can run as a script in the shared
// global context and keep its state for later cells:
//
//   const a = 1, {b} = o;     ->  void (a = 1, {b} = o);
//   let c;                    ->  void (c = undefined);
//   class C {}                ->  C = class C {};
//   function f() {}           ->  (kept; assigned to the global at the start)
//   import x, {y} from 'm'    ->  { const m = await import('m'); x = ...; ({y} = m); }
//   import('m')               ->  globalThis.__sandgate.import('m')  (workspace resolution)
//   last expression e         ->  return (e);
//
// all inside `var a, b, c, C, f, x, y; (async () => { globalThis.f = f; ... })()`,
// so top-level await works, each declared name is a global (a later cell may
// declare it again, as a notebook re-runs cells), and the value of the last
// expression is what the cell's promise resolves to. Only the first line
// grows: line numbers in stacks stay those of the cell. The parser is
// TypeScript's (ts.createSourceFile), so no JavaScript is parsed by hand.
//
// With { reportDeclarations: true } (TypeScript cells) the cell also says
// which of its names hold their value: the function that
// globalThis.__sandgate.declarations() returns as the cell starts is called
// with the names of each declaration once it has run:
//
//   const a = 1, {b} = o;     ->  void (a = 1, __sandgate_declared("a"), {b} = o, __sandgate_declared("b"));
//   class C {}                ->  C = class C {}; __sandgate_declared("C");
//   function f() {}           ->  at the start, after globalThis.f = f
//   import x from 'm'         ->  after the assignments in its block
'use strict';

module.exports = function makeRewriter(ts) {
  class SyntaxErrorAt extends Error {
    constructor(message, traceback) {
      super(message);
      this.name = 'SyntaxError';
      this.traceback = traceback;
    }
  }

  function bindingNames(name, out) {
    if (ts.isIdentifier(name)) {
      out.push(name.text);
    } else if (ts.isObjectBindingPattern(name) || ts.isArrayBindingPattern(name)) {
      for (const element of name.elements) {
        if (!ts.isOmittedExpression(element)) {
          bindingNames(element.name, out);
        }
      }
    }
  }

  const newlinesOf = (text) => text.replace(/[^\n]/g, '');

  function syntaxError(source, code) {
    const traceback = source.parseDiagnostics.map((d) => {
      const { line, character } = source.getLineAndCharacterOfPosition(d.start);
      return `cell:${line + 1}:${character + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    const first = source.parseDiagnostics[0];
    let message = ts.flattenDiagnosticMessageText(first.messageText, '\n');
    // V8's wording is the one JavaScript users know: ask it, on the cell as it was.
    try {
      new (require('vm').Script)(`(async () => {${code}\n})`);
    } catch (error) {
      if (error instanceof SyntaxError) {
        message = error.message;
      }
    }
    return new SyntaxErrorAt(message, [`SyntaxError: ${message}`, ...traceback]);
  }

  function rewriteCell(code, { reportDeclarations = false } = {}) {
    const source = ts.createSourceFile('cell.js', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
    if (source.parseDiagnostics && source.parseDiagnostics.length > 0) {
      throw syntaxError(source, code);
    }
    const edits = [];  // { pos, end, text, seq }
    const edit = (pos, end, text) => edits.push({ pos, end, text, seq: edits.length });
    const globals = [];
    const functions = [];
    let modules = 0;
    const declared = (names) => (reportDeclarations && names.length > 0
      ? `__sandgate_declared(${names.map((name) => JSON.stringify(name)).join(', ')})` : '');

    const statements = source.statements;
    statements.forEach((statement, index) => {
      for (const modifier of statement.modifiers || []) {
        if (modifier.kind === ts.SyntaxKind.ExportKeyword || modifier.kind === ts.SyntaxKind.DefaultKeyword) {
          edit(modifier.getStart(source), modifier.end, '');
        }
      }
      if (ts.isVariableStatement(statement)) {
        const list = statement.declarationList;
        const lexical = (list.flags & (ts.NodeFlags.Let | ts.NodeFlags.Const)) !== 0;
        const declarations = list.declarations;
        edit(list.getStart(source), declarations[0].getStart(source), 'void (');
        for (const declaration of declarations) {
          const names = [];
          bindingNames(declaration.name, names);
          globals.push(...names);
          if (!declaration.initializer && lexical) {
            edit(declaration.end, declaration.end, ' = undefined');
          }
          if (declared(names)) {
            edit(declaration.end, declaration.end, `, ${declared(names)}`);
          }
        }
        edit(declarations[declarations.length - 1].end, declarations[declarations.length - 1].end, ')');
      } else if (ts.isFunctionDeclaration(statement) && statement.name) {
        globals.push(statement.name.text);
        functions.push(statement.name.text);
      } else if (ts.isClassDeclaration(statement) && statement.name) {
        globals.push(statement.name.text);
        const at = statement.modifiers && statement.modifiers.length > 0
          ? statement.modifiers[statement.modifiers.length - 1].end : statement.getStart(source);
        edit(at, at, `${statement.name.text} = `);
        edit(statement.end, statement.end, ';');
        if (reportDeclarations) {
          edit(statement.end, statement.end, ` ${declared([statement.name.text])};`);
        }
      } else if (ts.isImportDeclaration(statement)) {
        const specifier = JSON.stringify(statement.moduleSpecifier.text);
        const clause = statement.importClause;
        const module = `__sandgate_module${modules++}`;
        const parts = [`const ${module} = await globalThis.__sandgate.import(${specifier});`];
        const names = [];
        if (clause && !clause.isTypeOnly) {
          if (clause.name) {
            names.push(clause.name.text);
            parts.push(`${clause.name.text} = ${module}.default;`);
          }
          const bindings = clause.namedBindings;
          if (bindings && ts.isNamespaceImport(bindings)) {
            names.push(bindings.name.text);
            parts.push(`${bindings.name.text} = ${module};`);
          } else if (bindings && ts.isNamedImports(bindings)) {
            const named = bindings.elements.filter((e) => !e.isTypeOnly).map((element) => {
              names.push(element.name.text);
              return element.propertyName
                ? `${JSON.stringify(element.propertyName.text)}: ${element.name.text}` : element.name.text;
            });
            if (named.length > 0) {
              parts.push(`({${named.join(', ')}} = ${module});`);
            }
          }
        }
        globals.push(...names);
        if (declared(names)) {
          parts.push(`${declared(names)};`);
        }
        const original = code.slice(statement.getStart(source), statement.end);
        edit(statement.getStart(source), statement.end, `{ ${parts.join(' ')} }${newlinesOf(original)}`);
      } else if (ts.isExportDeclaration(statement) || ts.isExportAssignment(statement)) {
        const original = code.slice(statement.getStart(source), statement.end);
        edit(statement.getStart(source), statement.end, newlinesOf(original));
      } else if (ts.isExpressionStatement(statement) && index === statements.length - 1) {
        edit(statement.expression.getStart(source), statement.expression.getStart(source), 'return (');
        edit(statement.expression.end, statement.expression.end, ')');
      }
    });

    // import(...) anywhere resolves from the workspace, not from this driver.
    const visit = (node) => {
      if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        edit(node.expression.getStart(source), node.expression.end, 'globalThis.__sandgate.import');
      }
      ts.forEachChild(node, visit);
    };
    visit(source);

    // From the end, so that positions stay valid; at one position a
    // replacement goes first and insertions keep the order they were made in.
    edits.sort((a, b) => b.pos - a.pos || (b.end - b.pos) - (a.end - a.pos) || b.seq - a.seq);
    let body = code;
    for (const { pos, end, text } of edits) {
      body = body.slice(0, pos) + text + body.slice(end);
    }
    const unique = [...new Set(globals)];
    const declare = unique.length > 0 ? `var ${unique.join(', ')}; ` : '';
    let hoisted = functions.map((name) => `globalThis[${JSON.stringify(name)}] = ${name}; `).join('');
    if (reportDeclarations) {
      hoisted = `const __sandgate_declared = globalThis.__sandgate.declarations(); ${hoisted}` +
        (functions.length > 0 ? `${declared(functions)}; ` : '');
    }
    return `${declare}(async () => { ${hoisted}${body}\n})()`;
  }

  return { rewriteCell, SyntaxErrorAt };
};
