// Removes the "name" custom section (function names for stack traces) from a .wasm file in
// place, leaving every other byte as wasm-bindgen wrote it. npm/build runs it on each module:
// the section was a quarter of the engine's bytes (913 KB raw, 137 KB with brotli) and only
// ever showed up as Rust names in the stack trace of a WebAssembly trap, which the package
// turns into a `reload_required` error anyway. Stripping with cargo's `strip` instead makes
// wasm-bindgen fall back to a slower calling convention and more JavaScript (it looks the
// stack pointer up by name), so the section goes after wasm-bindgen.
import { readFileSync, writeFileSync } from "node:fs";

for (const path of process.argv.slice(2)) {
  const bytes = readFileSync(path);
  if (bytes.readUInt32LE(0) !== 0x6d736100) throw new Error(`${path} is not a WebAssembly module`);
  const kept = [bytes.subarray(0, 8)];
  let at = 8;
  const leb = () => {
    let value = 0;
    let shift = 0;
    let byte;
    do {
      byte = bytes[at++];
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return value;
  };
  while (at < bytes.length) {
    const start = at;
    const id = bytes[at++];
    const size = leb();
    const end = at + size;
    if (end > bytes.length) throw new Error(`${path}: a section runs past the end of the file`);
    let name = null;
    if (id === 0) {
      const length = leb();
      name = bytes.subarray(at, at + length).toString("utf8");
    }
    if (name !== "name") kept.push(bytes.subarray(start, end));
    at = end;
  }
  writeFileSync(path, Buffer.concat(kept));
}
