// Tokenize .par files with the TextMate grammar, using the same engine as VS Code
// (vscode-textmate with the Oniguruma regex library compiled to WebAssembly).
//
//   node tokenize.js FILE...   ->   JSON on stdout: {"FILE": [[line tokens], ...], ...}
//
// A line's tokens are [start, end, [scopes...]] with UTF-16 offsets into the line, as the
// engine reports them. tests/test_textmate.py runs this over every spec in the repository.
"use strict";
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

async function main(files) {
  const wasm = fs.readFileSync(path.join(__dirname, "node_modules", "vscode-oniguruma", "release", "onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (sources) => new oniguruma.OnigScanner(sources),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async (scopeName) => {
      if (scopeName !== "source.par") return null;
      const file = path.join(__dirname, "par.tmLanguage.json");
      return vsctm.parseRawGrammar(fs.readFileSync(file, "utf8"), file);
    },
  });
  const grammar = await registry.loadGrammar("source.par");
  const out = {};
  for (const file of files) {
    const text = fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "");
    let stack = vsctm.INITIAL;
    const lines = [];
    for (const line of text.split(/\r?\n/)) {
      const result = grammar.tokenizeLine(line, stack, 5000);
      if (result.stoppedEarly) throw new Error(`${file}: tokenizing a line took too long`);
      lines.push(result.tokens.map((t) => [t.startIndex, Math.min(t.endIndex, line.length), t.scopes]));
      stack = result.ruleStack;
    }
    out[file] = lines;
  }
  process.stdout.write(JSON.stringify(out));
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + "\n");
  process.exit(1);
});
