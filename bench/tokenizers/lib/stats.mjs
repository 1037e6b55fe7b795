// Small statistics and formatting helpers shared by the stages and the report.

/** Median of a list of numbers (the mean of the two middle values for an even count). */
export function median(values) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** { median, min, max } of a list, or undefined for an empty list. */
export function summary(values) {
  if (!values.length) return undefined;
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

/**
 * Slope of log(time) against log(size) between two measurements: 1.0 means time grows in
 * proportion to the input (linear), 2.0 means it grows with its square (quadratic).
 */
export function logLogSlope(size1, time1, size2, time2) {
  if (!(time1 > 0 && time2 > 0)) return undefined;
  return Math.log(time2 / time1) / Math.log(size2 / size1);
}

/** A number with `digits` significant digits, without an exponent for ordinary magnitudes. */
export function significant(value, digits = 3) {
  if (!Number.isFinite(value)) return String(value);
  if (value === 0) return "0";
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  const decimals = Math.max(0, digits - 1 - magnitude);
  return value.toFixed(Math.min(decimals, 6));
}

/** A duration in milliseconds as "0.42 ms", "87.1 ms", "1.25 s". */
export function formatMs(ms) {
  if (ms === undefined || Number.isNaN(ms)) return "—";
  return ms >= 1000 ? `${significant(ms / 1000)} s` : `${significant(ms)} ms`;
}

/** A byte count as "1.23 MB" / "456 kB" / "789 B" (decimal units, as the MB/s figures). */
export function formatBytes(bytes) {
  if (bytes >= 1e6) return `${significant(bytes / 1e6)} MB`;
  if (bytes >= 1e3) return `${significant(bytes / 1e3)} kB`;
  return `${bytes} B`;
}

/** A ratio summary as "3.12× (2.80–3.41)". */
export function formatRatio(s) {
  if (!s) return "—";
  return `${significant(s.median)}× (${significant(s.min)}–${significant(s.max)})`;
}

/** Renders a Markdown table from a header row and data rows (cells are strings). */
export function markdownTable(header, rows, align) {
  const line = (cells) => `| ${cells.join(" | ")} |`;
  const rule = header.map((_, i) => (align?.[i] === "right" ? "---:" : "---"));
  return [line(header), line(rule), ...rows.map(line)].join("\n");
}
