
// ----- The guard (npm/ccm/glue/guard.js, appended by npm/build) ------------------------------
//
// Every export of this module passes through here, for two failures that the Rust code cannot
// report itself:
//
// - An object whose `free()` was called has no Rust value behind it any more; a call on it
//   would fail with "null pointer passed to rust". The guard refuses the call first, with an
//   `Error` whose `code` is "freed".
// - A WebAssembly trap (the allocator running out of memory, say) stops the module in the
//   middle of a call: its memory, and every session in it, may be half-changed. The guard turns
//   the trap into an `Error` with `code: "reload_required"` and refuses every later call the
//   same way, so nothing half-changed is used or saved; sessions saved before are safe.
//
// Argument types and sizes are checked by the Rust code (code "argument" or "too_large"),
// before anything reaches the module's memory.

const __ccmGuardState = { stopped: null };

function __ccmCodedError(code, message) {
  const error = new Error(message);
  error.code = code;
  return error;
}

function __ccmReloadRequired() {
  return __ccmCodedError(
    "reload_required",
    `cognitive-context stopped after a WebAssembly failure (${__ccmGuardState.stopped}), so its memory can no longer be trusted and every call is refused: reload the page (or restart the process). Sessions saved before are safe in storage; changes made since the last save are lost.`,
  );
}

// What a failure thrown by the module becomes for the caller.
function __ccmTranslate(error, where) {
  if (error instanceof WebAssembly.RuntimeError) {
    __ccmGuardState.stopped ??= error.message;
    return __ccmReloadRequired();
  }
  if (error instanceof Error && error.code === undefined) {
    // wasm-bindgen's own check of an argument declared as one of this module's classes.
    const expected = /^expected instance of (\w+)$/.exec(error.message);
    if (expected) {
      return __ccmCodedError("argument", `${where}: expected a ${expected[1]} object as its argument`);
    }
    if (error.message === "null pointer passed to rust") {
      return __ccmCodedError("freed", `${where}: an object it was given was freed (free() was called on it), so it can no longer be used`);
    }
  }
  return error;
}

// How a value's type reads in an error message, as the Rust checks write it.
function __ccmDescribe(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "undefined") return "undefined";
  if (typeof value === "object") return "an object";
  if (typeof value === "bigint") return "a BigInt";
  return `a ${typeof value}`;
}

// The arguments of `loadEncoding` (tables.*.js, which is JavaScript only): an encoding name,
// and options `{ url?, onProgress? }` or nothing. Returns the options to use.
function __ccmCheckLoadArguments(encoding, options) {
  if (typeof encoding !== "string") {
    throw __ccmCodedError("argument", `loadEncoding: encoding must be a string, got ${__ccmDescribe(encoding)}`);
  }
  if (options === undefined || options === null) return {};
  if (typeof options !== "object" || Array.isArray(options)) {
    throw __ccmCodedError("argument", `loadEncoding: options must be an object { url?, onProgress? }, got ${__ccmDescribe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (key !== "url" && key !== "onProgress") {
      throw __ccmCodedError("argument", `loadEncoding: unknown key \`${key}\` in options; the keys are url, onProgress`);
    }
  }
  return options;
}

function __ccmIsFreed(value) {
  return value !== null && typeof value === "object" && "__wbg_ptr" in value && value.__wbg_ptr === 0;
}

// `fn` with the checks above; `className` is set for methods and getters, whose `this` must
// not be freed.
function __ccmGuardFunction(fn, where, className) {
  const guarded = function (...args) {
    if (__ccmGuardState.stopped !== null) throw __ccmReloadRequired();
    if (className !== undefined && __ccmIsFreed(this)) {
      throw __ccmCodedError("freed", `${where}: this ${className} was freed (free() was called on it), so it can no longer be used`);
    }
    for (const arg of args) {
      if (__ccmIsFreed(arg)) {
        throw __ccmCodedError("freed", `${where}: the ${arg.constructor.name} it was given was freed (free() was called on it), so it can no longer be used`);
      }
    }
    let result;
    try {
      result = fn.apply(this, args);
    } catch (error) {
      throw __ccmTranslate(error, where);
    }
    if (result instanceof Promise) {
      return result.then(undefined, (error) => { throw __ccmTranslate(error, where); });
    }
    return result;
  };
  // The same name and number of declared parameters as the function it guards.
  Object.defineProperty(guarded, "name", { value: fn.name });
  Object.defineProperty(guarded, "length", { value: fn.length });
  return guarded;
}

function __ccmGuardClass(cls) {
  const name = cls.name;
  for (const key of Object.getOwnPropertyNames(cls.prototype)) {
    // wasm-bindgen's own `__` members are left alone; the package's internal `__ccm` methods
    // (streamTurn's) are guarded like any other.
    if (key === "constructor" || (key.startsWith("__") && !key.startsWith("__ccm"))) continue;
    const descriptor = Object.getOwnPropertyDescriptor(cls.prototype, key);
    const where = key;
    if (key === "free") {
      // Freeing twice does nothing (wasm-bindgen's own `free` would pass a null pointer).
      const free = descriptor.value;
      descriptor.value = function () {
        if (!__ccmIsFreed(this)) free.call(this);
      };
      Object.defineProperty(cls.prototype, key, descriptor);
      continue;
    }
    if (typeof descriptor.value === "function") descriptor.value = __ccmGuardFunction(descriptor.value, where, name);
    if (descriptor.get) descriptor.get = __ccmGuardFunction(descriptor.get, where, name);
    if (descriptor.set) descriptor.set = __ccmGuardFunction(descriptor.set, where, name);
    Object.defineProperty(cls.prototype, key, descriptor);
  }
  for (const key of Object.getOwnPropertyNames(cls)) {
    if (["length", "name", "prototype"].includes(key) || key.startsWith("__")) continue;
    const descriptor = Object.getOwnPropertyDescriptor(cls, key);
    if (typeof descriptor.value !== "function") continue;
    descriptor.value = __ccmGuardFunction(descriptor.value, `${name}.${key}`);
    Object.defineProperty(cls, key, descriptor);
  }
  // `new Session(...)` goes through the same checks; `instanceof` and statics see the class.
  return new Proxy(cls, {
    construct(target, args, newTarget) {
      if (__ccmGuardState.stopped !== null) throw __ccmReloadRequired();
      try {
        return Reflect.construct(target, args, newTarget);
      } catch (error) {
        throw __ccmTranslate(error, `new ${name}`);
      }
    },
  });
}

// The exports, guarded: classes (their methods, getters and statics, and `new`) and functions.
// Module set-up functions (`initSync`, the default `init`) are left alone.
function __ccmGuardExports(exported) {
  const guarded = {};
  for (const [key, value] of Object.entries(exported)) {
    if (typeof value !== "function" || key === "initSync" || key === "default") {
      guarded[key] = value;
    } else if (/^class\b/.test(Function.prototype.toString.call(value))) {
      guarded[key] = __ccmGuardClass(value);
    } else {
      guarded[key] = __ccmGuardFunction(value, key);
    }
  }
  return guarded;
}
