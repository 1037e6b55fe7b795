
/**
 * Loads an encoding's rank table once, so that `countTokens` and sessions in that encoding can
 * count exactly. Browsers fetch the package's `<encoding>.ccmt` (or `options.url`), reporting
 * progress to `options.onProgress`; Node reads the file (and would also load it by itself on
 * first use).
 */
export function loadEncoding(
  encoding: Encoding,
  options?: { url?: string; onProgress?: LoadProgress },
): Promise<void>;
