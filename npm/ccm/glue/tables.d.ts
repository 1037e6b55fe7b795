
/** The progress of `loadEncoding`: bytes while downloading, then tokens while parsing. */
export type LoadProgress = (done: number, total: number, phase: "download" | "parse") => void;

/**
 * Loads an encoding's rank table once, so that `countTokens` and sessions in that encoding can
 * count exactly. Browsers fetch `tables/<encoding>.ccmt` from the package (or `options.url`);
 * Node reads the file (and would also load it by itself on first use).
 */
export function loadEncoding(
  encoding: "o200k_base" | "cl100k_base",
  options?: { url?: string; onProgress?: LoadProgress },
): Promise<void>;
