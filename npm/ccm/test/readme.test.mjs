// The package's types and README as a TypeScript developer meets them, from the packed tarball.
//
// Every ```ts block of the shipped README becomes a module, and types.ts (type assertions:
// closed sets reject typos, plain objects are accepted, nothing is `any`) joins them. tsc
// --strict checks them all with the default lib and skipLibCheck off, once for each module
// resolution a project may use: "nodenext" (the Node build's declarations) and "bundler" (the
// browser build's). The README's blocks then run in Node from tsc's output, with a
// console.assert that throws; a block that starts with `// In a browser` is only checked, and
// one that starts with `// Recipe` is run by recipes.test.mjs against the mock provider.
//
// Runs in the fixture project where npm/test-package installed the tarball (typescript comes
// from the fixtures' lock file).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const fixtures = fileURLToPath(new URL("..", import.meta.url));
const packageDir = dirname(require.resolve("cognitive-context/package.json"));
const tsc = join(fixtures, "node_modules", "typescript", "bin", "tsc");

const readme = readFileSync(join(packageDir, "README.md"), "utf8");
// The PostgreSQL example names the database a reader would have; it runs against the test
// suite's throwaway cluster instead (scripts/test starts it), so the URL is swapped for that
// one. Without a cluster the example cannot run, and that is a failure, not a skip.
const exampleDatabase = "postgres://app@localhost:5432/chat";
const testDatabase = process.env.CCM_TEST_POSTGRES_URL;
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => {
  if (!match[1].includes(exampleDatabase)) return match[1];
  if (!testDatabase) {
    throw new Error("CCM_TEST_POSTGRES_URL is not set: the README's PostgreSQL example needs the cluster scripts/test starts (scripts/postgres-cluster)");
  }
  return match[1].replaceAll(exampleDatabase, testDatabase);
});
// Recipes talk to a model through an SDK: recipes.test.mjs runs them against the mock provider.
const runnable = (code) => !code.startsWith("// In a browser") && !code.startsWith("// Recipe");

// The project tsc checks: one module per README block, and the type assertions.
const project = join(fixtures, "typescript");
rmSync(project, { recursive: true, force: true });
mkdirSync(project);
blocks.forEach((code, index) => writeFileSync(join(project, `readme-${index + 1}.ts`), code));
copyFileSync(fileURLToPath(new URL("types.ts", import.meta.url)), join(project, "types.ts"));
// Only the package's own declarations and the default lib: no @types package may help.
const compilerOptions = { strict: true, target: "ES2022", skipLibCheck: false, types: [] };
const configs = {
  nodenext: { ...compilerOptions, module: "nodenext", outDir: "out" },
  bundler: { ...compilerOptions, module: "esnext", moduleResolution: "bundler", noEmit: true },
};
for (const [name, options] of Object.entries(configs)) {
  writeFileSync(join(project, `tsconfig.${name}.json`), JSON.stringify({ compilerOptions: options, include: ["*.ts"] }));
}
// The emitted modules are ES modules, like the fixture project's own files.
writeFileSync(join(project, "package.json"), '{ "type": "module" }\n');

test("the README has TypeScript examples, runnable ones among them", () => {
  assert.ok(blocks.length >= 8, `found ${blocks.length} ts blocks`);
  assert.ok(blocks.filter(runnable).length >= 7);
});

for (const name of Object.keys(configs)) {
  test(`tsc --strict accepts the README and the type assertions (moduleResolution ${name})`, () => {
    const result = spawnSync(process.execPath, [tsc, "-p", join(project, `tsconfig.${name}.json`)], { encoding: "utf8" });
    assert.equal(result.status, 0, `tsc reported:\n${result.stdout}${result.stderr}`);
  });
}

test("the declarations use no `any` (wasm-bindgen's init functions of the /web modules aside)", () => {
  const found = [];
  for (const dir of ["node", "web"]) {
    for (const file of readdirSync(join(packageDir, dir)).filter((f) => f.endsWith(".d.ts"))) {
      const text = readFileSync(join(packageDir, dir, file), "utf8");
      // The `web` target's init section types the raw wasm exports; it is not the package's API.
      const api = text.split("export type InitInput")[0];
      const code = api.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
      for (const line of code.split("\n").filter((l) => /\bany\b/.test(l))) found.push(`${dir}/${file}: ${line.trim()}`);
    }
  }
  assert.deepEqual(found, []);
});

const strictAssert = join(project, "strict-assert.mjs");
writeFileSync(
  strictAssert,
  'console.assert = (ok, ...message) => { if (!ok) throw new Error("README assertion failed " + message.join(" ")); };\n',
);

blocks.forEach((code, index) => {
  if (!runnable(code)) return;
  test(`README example ${index + 1} runs in Node`, () => {
    // tsc (moduleResolution nodenext) emitted it; that test runs first.
    execFileSync(process.execPath, ["--import", strictAssert, join(project, "out", `readme-${index + 1}.js`)], {
      stdio: "pipe",
    });
  });
});
